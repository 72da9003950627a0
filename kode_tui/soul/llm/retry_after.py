"""The wait a server asks for before the next request: `Retry-After` (RFC 9110: seconds, or an
HTTP date) and OpenAI's finer `retry-after-ms`.

litellm and the OpenAI SDK keep the response headers of an error in different places (the SDK's
`response.headers`, litellm's `litellm_response_headers` or `headers`); `retry_after` looks in
each. It runs in the model process; the wait travels to the soul on the `LLMStatusError`.
"""

from __future__ import annotations

import datetime
import email.utils
import math
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["retry_after"]


def retry_after(errors: Iterable[BaseException]) -> float | None:
    """The seconds the server asked to wait (`retry-after-ms`, else `Retry-After` in seconds or
    as a date), read from the response headers wherever litellm or the SDK kept them in
    `errors` (an exception and what it wraps); None when it did not say."""
    for error in errors:
        response = getattr(error, "response", None)
        for headers in (
            getattr(error, "litellm_response_headers", None),
            getattr(error, "headers", None),
            getattr(response, "headers", None),
        ):
            if isinstance(headers, Mapping):
                wait = _wait_asked(headers)
                if wait is not None:
                    return wait
    return None


def _wait_asked(headers: Mapping[str, Any]) -> float | None:
    found = {str(name).lower(): str(value).strip() for name, value in headers.items()}
    milliseconds = _seconds(found.get("retry-after-ms"))  # OpenAI's, finer than Retry-After
    if milliseconds is not None:
        return milliseconds / 1000
    value = found.get("retry-after")
    if value is None:
        return None
    seconds = _seconds(value)
    if seconds is not None:
        return seconds
    try:
        when = email.utils.parsedate_to_datetime(value)  # the other form: an HTTP date
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.UTC)
    return max(0.0, (when - datetime.datetime.now(datetime.UTC)).total_seconds())


def _seconds(text: str | None) -> float | None:
    """`text` as a number of seconds a server may mean (finite, not negative), else None."""
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None
