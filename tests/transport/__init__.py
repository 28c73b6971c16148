"""Tests of the transports (dshstream/_transport): HTTP over loopback, and the in-memory one."""
