"""Cassettes: record the HTTP exchanges of a test once, replay them offline ever after.

Everything sits behind the transport seam: while a cassette is in use, every
:class:`~dshstream._transport.client.HttpTransport` of the process sends through it (the
interception hook, :mod:`dshstream._transport.intercept`). One concern per file, each with
its numbered rules:

=============  ==============================================================================
file           concern
=============  ==============================================================================
format.py      the cassette file: interactions as diff-friendly JSON text, checked when read
redaction.py   what is written of a request and an answer: secrets and named fields out
recorder.py    recording: real exchanges through, each kept as the stream read it
player.py      replay: matched requests answered as recorded, through HTTP on 127.0.0.1
session.py     a cassette in use (``use_cassette``, ``Cassette``): start, stop, misses
=============  ==============================================================================

The public names are in :mod:`dshstream.testing`; the pytest plugin
(:mod:`dshstream._pytest_plugin`) opens one cassette per test.
"""

from __future__ import annotations

from .format import Interaction as Interaction
from .session import Cassette as Cassette
from .session import use_cassette as use_cassette

__all__ = ["Cassette", "Interaction", "use_cassette"]
