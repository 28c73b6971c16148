"""Tests of the tools dshstream gives its users' own tests and apps: cassettes and their
pytest plugin (``dshstream.testing``), and the streams to a browser (``dshstream.web``)."""
