"""Moved to :mod:`dshstream._core.headers`; this shim only keeps ``_adapters/litellm.py``'s import."""

from ._core.headers import (  # noqa: F401 - re-exported
    REQUEST_ID_HEADERS as REQUEST_ID_HEADERS,
    all_secrets as all_secrets,
    is_plain_id as is_plain_id,
    lower_headers as lower_headers,
    parse_retry_after as parse_retry_after,
    request_id_from as request_id_from,
)
