"""Socket shutdown: how a blocked send or read is ended from another thread.

Contract: stdlib only, plus :func:`~dshstream._transport.readers.socket_of` to find the
socket under a response. Best effort: these never raise.

1. **Shut down, not closed.** A socket is ended with ``socket.socket.shutdown(SHUT_RDWR)``
   called on the plain socket class: the thread blocked in it returns at once, and an
   SSL socket's own ``shutdown`` (which also tears down the SSL object that thread may
   still be using) is never called. Closing is left to the owner.
2. **A response's socket.** :func:`shutdown_response` uses urllib3's
   ``HTTPResponse.shutdown`` where there is one (2.3 and later), else shuts the socket
   under the response.
"""

from __future__ import annotations

import socket
from typing import Any

import requests

from .readers import socket_of

__all__ = ["shutdown_response", "shutdown_socket"]


def shutdown_response(response: requests.Response) -> None:
    """Shut the response's socket down so a blocked read returns at once (urllib3 before
    2.3 has no ``HTTPResponse.shutdown``, rule 2)."""
    raw: Any = response.raw
    try:
        shutdown = getattr(raw, "shutdown", None)
        if shutdown is not None:
            shutdown()
            return
    except Exception:  # noqa: BLE001 - fall back to the socket itself
        pass
    shutdown_socket(socket_of(raw))


def shutdown_socket(sock: object) -> None:
    """Shut ``sock`` down if it is a socket (rule 1)."""
    if isinstance(sock, socket.socket):
        try:
            socket.socket.shutdown(sock, socket.SHUT_RDWR)
        except OSError:  # best effort: the socket may be gone already
            pass
