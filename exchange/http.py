"""What every HTTP and WebSocket edge shares, whatever layer it sits in (API, UI, consumer):
the error body, whole numbers from the address, and JSON read with its work bounded first.

The API and the UI both import from here, so the UI never needs the API layer.
"""

from __future__ import annotations

import json
import re
from typing import Any

from django.conf import settings

from exchange.errors import ExchangeError, InvalidInput

# The largest id PostgreSQL's bigint holds, plus one.
_BIGINT_END = 2**63
# One token per step of the nesting scan: an escape inside a string (backslash and the next
# character), a quote, or a bracket. Everything else is skipped by the regex engine, in C.
_NESTING_TOKENS = re.compile(r'\\.|["\[\]{}]', re.DOTALL)


class PayloadTooLarge(ExchangeError):
    status = 413


# The UI's JSON endpoints outside /api/ (the constraint check as you type).
_UI_JSON_SUFFIXES = ("/check/",)


def is_api(request: Any) -> bool:
    """Whether ``request`` is to the REST API (``/api/``)."""
    path: str = request.path
    return path.startswith("/api/")


def wants_json(request: Any) -> bool:
    """Whether an error answer to ``request`` is JSON (the API, the UI's JSON endpoints)
    rather than a page."""
    return is_api(request) or request.path.endswith(_UI_JSON_SUFFIXES)


def error_body(
    code: str, message: str, *, field: str | None = None, position: int | None = None
) -> dict[str, Any]:
    """The one error shape of SPEC 6.2: ``{"error": {"code", "message", "field"?, "position"?}}``."""
    error: dict[str, Any] = {"code": code, "message": message}
    if field:
        error["field"] = field
    if position is not None:
        error["position"] = position
    return {"error": error}


def whole_number(value: str) -> int | None:
    """``value`` as a non-negative bigint, or None.

    Only ASCII digits count: ``str.isdigit`` and ``int`` accept '²' or '٣', which then fail
    (or mean something else) further down."""
    if not re.fullmatch(r"[0-9]{1,19}", value) or int(value) >= _BIGINT_END:
        return None
    return int(value)


def frame_whole_number(value: object) -> int | None:
    """A whole number as a JSON frame sends it (a number or a string of digits), or None
    (``true``, a fraction, a negative number, anything else)."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        return None
    return whole_number(str(value))


def query_whole_number(params: Any, name: str, *, default: int) -> int:
    """The whole-number query parameter ``name`` (``default`` when absent); a clear 400
    naming the parameter otherwise."""
    raw = params.get(name)
    if raw is None:
        return default
    number = whole_number(raw)
    if number is None:
        raise InvalidInput(
            f"invalid_{name}", f"{name} is a whole number written with the digits 0-9.", field=name
        )
    return number


def nesting_within(text: str, limit: int) -> bool:
    """True if no array or object in JSON ``text`` nests deeper than ``limit``.

    A linear scan that never recurses, run before ``json.loads`` (whose C scanner recurses
    once per level and raises RecursionError on deep input). It stops at the first level
    too deep. Text that is not JSON may pass; the parser then rejects it as usual.
    """
    depth = 0
    in_string = False
    for match in _NESTING_TOKENS.finditer(text):
        token = match.group()
        if token == '"':
            in_string = not in_string
        elif in_string or len(token) == 2:
            continue
        elif token in "[{":
            depth += 1
            if depth > limit:
                return False
        else:
            depth -= 1
    return True


def json_bounded(
    raw: bytes | str,
    *,
    max_bytes: int | None = None,
    max_depth: int | None = None,
    what: str = "The body",
) -> Any:
    """Parse a JSON document after checking its size and nesting, which bound the work.

    Raises PayloadTooLarge (413) past ``max_bytes`` (``JSON_MAX_BYTES``) and InvalidInput
    (400) for nesting past ``max_depth`` (``JSON_MAX_DEPTH``), text that is not UTF-8 or not
    JSON. Callers pass at most ``max_bytes + 1`` bytes so that an oversize body is never read
    in full. ``what`` names the document in the messages (a feed's line, a map file)."""
    max_bytes = settings.JSON_MAX_BYTES if max_bytes is None else max_bytes
    max_depth = settings.JSON_MAX_DEPTH if max_depth is None else max_depth
    size = len(raw) if isinstance(raw, bytes) else len(raw.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise PayloadTooLarge("too_large", f"{what} is limited to {max_bytes} bytes.")
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError:
        raise InvalidInput("bad_json", f"{what} is not UTF-8 text.") from None
    if not nesting_within(text, max_depth):
        raise InvalidInput(
            "too_deep", f"JSON may nest arrays and objects at most {max_depth} levels deep."
        )
    try:
        return json.loads(text)
    except ValueError as exc:
        raise InvalidInput("bad_json", f"{what} is not valid JSON: {exc}.") from None
