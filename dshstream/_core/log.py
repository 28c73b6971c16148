"""Loggers that never write a secret.

Contract: stdlib only. :func:`get_logger` returns ``logging.getLogger(name)`` for a name
under :data:`ROOT_LOGGER_NAME` (other names are prefixed with it) with one
:class:`RedactingFilter` attached. :data:`ROOT_LOGGER_NAME` is derived from this module's
own ``__name__``: ``"dshstream"`` when installed, ``"legacyapp._vendor.dshstream"`` when
the package is vendored under that name. Callers may spell a logger the canonical way
(``"dshstream._transport"``); that prefix is mapped onto the real package name, so a
vendored copy never logs into (or is configured by) the installed copy's loggers.

Logger filters only run on the logger a record is created on (a parent's filters never
see a child's records), so every dshstream logger gets its own filter. The filter formats
``record.msg % record.args``, redacts it with every secret registered through
:func:`dshstream._core.redact.register_secret` (plus the credential patterns of
:func:`dshstream._core.redact.redact`), stores the result in ``record.msg`` and clears
``record.args``; it renders ``exc_info`` into ``exc_text`` and
redacts that and ``stack_info`` too (``exc_info`` itself is left for handlers that need
the exception object; standard formatters use the redacted ``exc_text``). The structured
facts a record carries for JSON handlers (``record.dshstream``, a dict) are redacted the
same way (:func:`dshstream._core.redact.redact_obj`): a second line behind the records,
whose response-derived fields are already checked where they are built
(:mod:`dshstream._observe` rule 7).

The top logger (:data:`ROOT_LOGGER_NAME`) gets a :class:`logging.NullHandler`, so a
library user who configured no logging sees nothing; configuration is left to the
application.
"""

from __future__ import annotations

import logging
import threading

from .redact import known_secrets, redact, redact_obj

__all__ = ["ROOT_LOGGER_NAME", "RedactingFilter", "get_logger"]

#: The package's own name, from ``__name__`` (``"dshstream"``, or the vendored dotted name).
ROOT_LOGGER_NAME = __name__.rsplit(".", 2)[0]  # "<package>._core.log" -> "<package>"
# How callers spell logger names in the source; mapped onto ROOT_LOGGER_NAME.
_CANONICAL_NAME = "dshstream"
_lock = threading.Lock()


class RedactingFilter(logging.Filter):
    """Redacts the message, exception text and stack text of every record it sees."""

    def filter(self, record: logging.LogRecord) -> bool:
        secrets = known_secrets()
        try:
            message = record.getMessage()
        except Exception:  # bad format args: keep what we can, never fail the log call
            message = f"{record.msg!s} (unformattable args)"
        record.msg = redact(message, secrets)
        record.args = ()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text, secrets)
        if record.stack_info:
            record.stack_info = redact(record.stack_info, secrets)
        facts = record.__dict__.get("dshstream")
        if isinstance(facts, dict):  # what a JSON handler writes as it is
            record.__dict__["dshstream"] = redact_obj(facts, secrets)
        return True


def _install(logger: logging.Logger) -> None:
    if not any(isinstance(f, RedactingFilter) for f in logger.filters):
        logger.addFilter(RedactingFilter())


def _qualify(name: str) -> str:
    """``name`` under ROOT_LOGGER_NAME; a canonical ``dshstream[.x]`` prefix is re-rooted."""
    if name == ROOT_LOGGER_NAME or name.startswith(ROOT_LOGGER_NAME + "."):
        return name
    if name == _CANONICAL_NAME or name.startswith(_CANONICAL_NAME + "."):
        name = name[len(_CANONICAL_NAME) + 1 :]
    return f"{ROOT_LOGGER_NAME}.{name}" if name else ROOT_LOGGER_NAME


def get_logger(name: str) -> logging.Logger:
    """The dshstream logger ``name`` (``__name__`` of a dshstream module), filter attached."""
    logger = logging.getLogger(_qualify(name))
    with _lock:
        _install(logger)
    return logger


def _setup_root() -> None:
    root = logging.getLogger(ROOT_LOGGER_NAME)
    with _lock:
        _install(root)
        if not any(isinstance(h, logging.NullHandler) for h in root.handlers):
            root.addHandler(logging.NullHandler())


_setup_root()
