"""dshstream.testing: tools to test code that streams, without a provider or a network.

Contract: nothing here reaches beyond the machine, and nothing here is for production
traffic.

- :class:`ReplayServer` is an HTTP server bound to 127.0.0.1 (a free port) that answers each
  request with the recorded body of the longest matching path prefix — bytes, or a
  :class:`Route` (a status, headers, chunked or close-delimited, paced or scripted writes;
  a list of routes is served in order, the last one repeating) — so an adapter pointed at
  it takes the real path: HTTP, framing, the wire translator, the assembler. It records
  each request it received (path, headers, JSON body) for assertions; use it with
  ``start()``/``stop()`` or as a context manager. Stdlib only.
- :class:`MemoryTransport` serves given answers without sockets (:class:`MemoryAnswer`: a
  status, headers, the body in pieces, pauses, a failing read), with the outcomes HTTP
  would have (the same status judging, limits and failures); it stands in for an HTTP
  adapter's ``transport`` and keeps every request it was sent (``.requests``).
- :func:`use_cassette` (a :class:`Cassette`) records the HTTP exchanges of a block of code
  into a file — the request (method, URL, headers and body with credentials and the
  fields you name redacted) and the answer's bytes exactly as read — or, replaying,
  answers them from it through the real HTTP path on 127.0.0.1; a request it has no
  answer for fails loudly, saying how to record it. Every HTTP adapter of the process
  uses it while it is open, however deep in an application it was built. The pytest
  plugin (``@pytest.mark.dshstream_cassette``, the ``dshstream_cassette`` fixture,
  ``--dshstream-record``) opens one per test; :class:`Interaction` is one recorded
  exchange.

Importing this module imports nothing more; each name loads its own module on first use.
"""

import typing as _typing

from . import _exports

if _typing.TYPE_CHECKING:
    from ._replay_server import ReplayServer as ReplayServer, Route as Route
    from ._transport.memory import MemoryAnswer as MemoryAnswer, MemoryTransport as MemoryTransport
    from ._cassettes.session import Cassette as Cassette, use_cassette as use_cassette
    from ._cassettes.format import Interaction as Interaction

__all__ = _exports.public_names("testing")


def __getattr__(name: str) -> _typing.Any:
    return _exports.load("testing", name)


def __dir__() -> list[str]:
    return _exports.dir_of("testing")
