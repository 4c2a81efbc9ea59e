"""Literals: what a written value is, which types it fits, and how it is printed.

A literal has a *kind* (the type its spelling suggests: ``42`` is int, ``1.00``
decimal, ``1e0`` float, ``DATE '...'`` date, ...) and is *converted* to the type of
its attribute. SPEC 2.1: an int literal fits int, decimal and float; a decimal
literal fits decimal and float; every other kind fits only its own type.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import TypeVar

from .errors import Loc, error
from .model import Box, Point, Type, Value

INT8_MIN = -(2**63)
INT8_MAX = 2**63 - 1

# The bounds on a number as written (docs/matching.md, "Limits"), checked on its spelling
# before int(), Decimal() or float() sees it, so that no literal costs more than a few
# hundred digits of work: at most MAX_DIGITS significant digits (from the first non-zero
# one to the last written one), and no written digit standing for a power of ten above
# 10**MAX_EXPONENT or below 10**-(MAX_EXPONENT + MAX_DIGITS) (so 1e-400 can still carry all
# its digits). That holds all of float8 (about 5e-324 to 1.8e308; its own checks explain the
# numbers between its edges and these) and is far inside PostgreSQL numeric; int8's exact
# range is checked when an int is converted.
MAX_DIGITS = 40
MAX_EXPONENT = 400
_LOWEST = -(MAX_EXPONENT + MAX_DIGITS)

_NUMERIC_RANK = {Type.INT: 0, Type.DECIMAL: 1, Type.FLOAT: 2}

# Characters PostgreSQL text cannot hold (NUL) or UTF-8 cannot encode (lone surrogates).
_BAD_TEXT = re.compile("[\x00\ud800-\udfff]")

_T = TypeVar("_T")

_DATE_RE = re.compile(r"(\d{4})-(\d{2})-(\d{2})\Z", re.ASCII)
_TIMESTAMP_RE = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?"
    r"(Z|[+-]\d{2}:\d{2})?\Z",
    re.ASCII,
)
NUMBER_RE = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?\Z", re.ASCII)
_NUMBER_PARTS_RE = re.compile(r"-?(\d+)(?:\.(\d+))?(?:[eE]([+-]?)0*(\d*))?\Z", re.ASCII)
# An exponent with more digits than this is out of range whatever the mantissa (it would
# take a mantissa of a million digits to bring it back, and that is out of range itself).
_MAX_EXPONENT_DIGITS = 6

EXAMPLES = {
    Type.INT: "a whole number such as 42",
    Type.DECIMAL: "a number such as 1.00 or 42",
    Type.FLOAT: "a number such as 1.5e3, 1.00 or 42",
    Type.DATE: "a date such as DATE '2026-11-20'",
    Type.TIMESTAMP: "a timestamp such as TIMESTAMP '2026-11-20T10:00:00Z'",
    Type.STRING: "a string such as 'pencils'",
    Type.POINT: "a point such as POINT(1.5, 2)",
    Type.BOX: "a box such as BOX(0, 0, 1, 1)",
}

_KIND_NAMES = {
    Type.INT: "an int",
    Type.DECIMAL: "a decimal",
    Type.FLOAT: "a float",
    Type.DATE: "a date",
    Type.TIMESTAMP: "a timestamp",
    Type.STRING: "a string",
    Type.POINT: "a point",
    Type.BOX: "a box",
}

Raw = str | int | Decimal | dt.date | Point | Box


class Lit:
    """A literal as written: its kind (``None`` for ``*``), its raw form and where it is.

    ``raw`` is the literal's text for numbers, dates, timestamps and strings (the
    content between the quotes), a ``Point`` or ``Box`` for geometric literals, and
    may be an ``int`` or ``Decimal`` when it comes from the JSON form.
    """

    __slots__ = ("kind", "raw", "loc")

    def __init__(self, kind: Type | None, raw: Raw, loc: Loc) -> None:
        self.kind = kind
        self.raw = raw
        self.loc = loc


def number_kind(text: str) -> Type:
    """The kind of a number token that already matched ``NUMBER_RE``."""
    if "e" in text or "E" in text:
        return Type.FLOAT
    if "." in text:
        return Type.DECIMAL
    return Type.INT


def number_lit(text: str, loc: Loc) -> Lit:
    """The literal of a number as written (text that already matched ``NUMBER_RE``).

    ``ConstraintError`` if it is out of the bounds above: every number written as text (in
    the text syntax or as a JSON string) enters the language here; JSON numbers go through
    ``check_int`` and ``check_decimal``, which apply the same bounds.
    """
    m = _NUMBER_PARTS_RE.match(text)
    assert m is not None, text
    whole, fraction, sign, exponent_digits = m.groups()
    fraction = fraction or ""
    exponent = 0
    if exponent_digits:
        if len(exponent_digits) > _MAX_EXPONENT_DIGITS:
            raise _out_of_range(abbreviated(text), loc)
        exponent = -int(exponent_digits) if sign == "-" else int(exponent_digits)
    if len(whole) - 1 + exponent > MAX_EXPONENT or exponent - len(fraction) < _LOWEST:
        raise _out_of_range(abbreviated(text), loc)
    # at most MAX_EXPONENT - _LOWEST + 1 digits are left to count
    if len((whole + fraction).lstrip("0")) > MAX_DIGITS:
        raise _too_many_digits(abbreviated(text), loc)
    return Lit(number_kind(text), text, loc)


def check_decimal(value: Decimal, loc: Loc) -> None:
    """The bounds of ``number_lit`` on a finite ``Decimal`` from the JSON form."""
    _, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    if exponent + len(digits) - 1 > MAX_EXPONENT or exponent < _LOWEST:
        raise _out_of_range(abbreviated(str(value)), loc)
    if len(digits) > MAX_DIGITS:  # a Decimal's digits have no leading zeros
        raise _too_many_digits(abbreviated(str(value)), loc)


def check_plain_decimal(value: Decimal, loc: Loc) -> None:
    """The digit bound of ``number_lit`` on a JSON number that becomes a decimal value.

    The text form prints decimals in plain notation (1E+40 as a 1 and forty zeros), where the
    zeros a positive exponent stands for are written and count; so they count here too, and
    whatever the JSON form takes the text form can print back (SPEC 2.5). Floats print with
    an exponent and need only ``check_decimal``.
    """
    _, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    if len(digits) + max(exponent, 0) > MAX_DIGITS:
        raise _too_many_digits(abbreviated(str(value)), loc)


def check_int(value: int, loc: Loc) -> None:
    """The bounds of ``number_lit`` on an ``int`` from the JSON form."""
    if not -(10**MAX_DIGITS) < value < 10**MAX_DIGITS:
        # not printed: str() of a huge int is itself the work being refused
        raise _too_many_digits("this number", loc)


def _out_of_range(text: str, loc: Loc) -> Exception:
    return error(
        "bad_literal",
        f"{text} is out of range: numbers go up to 1e{MAX_EXPONENT} in size and down to "
        f"1e{_LOWEST} in precision (floats go from about 5e-324 to about 1.8e308)",
        loc,
    )


def _too_many_digits(what: str, loc: Loc) -> Exception:
    return error(
        "bad_literal",
        f"{what} has too many digits: a number may have at most {MAX_DIGITS} significant digits",
        loc,
    )


def abbreviated(text: str, *, quoted: bool = False) -> str:
    """``text`` for a message (between single quotes if ``quoted``): whole if short, else its
    start and its length, since neither a JSON string nor a JSON number has a length limit."""
    if len(text) <= 40:
        return quote_string(text) if quoted else text
    start = quote_string(text[:30])[:-1] + "...'" if quoted else text[:30] + "..."
    return f"{start} ({len(text):,} characters)"


def shown(lit: Lit) -> str:
    """The literal as a trader would write it, for messages."""
    kind, raw = lit.kind, lit.raw
    if kind is None:
        return "*"
    if kind is Type.STRING:
        return abbreviated(str(raw), quoted=True)
    if kind is Type.DATE:
        return f"DATE {abbreviated(str(raw), quoted=True)}"
    if kind is Type.TIMESTAMP:
        if isinstance(raw, dt.datetime):
            return f"TIMESTAMP '{format_timestamp_body(raw)}'"
        return f"TIMESTAMP {abbreviated(str(raw), quoted=True)}"
    if isinstance(raw, Point):
        return f"POINT({raw.x!r}, {raw.y!r})"
    if isinstance(raw, Box):
        return f"BOX({raw.x1!r}, {raw.y1!r}, {raw.x2!r}, {raw.y2!r})"
    if isinstance(raw, Decimal):
        return abbreviated(format(raw, "f") if abs(raw.adjusted()) < 40 else str(raw))
    return abbreviated(str(raw))


def kind_name(kind: Type) -> str:
    return _KIND_NAMES[kind]


def check_text(text: str, loc: Loc, what: str) -> None:
    m = _BAD_TEXT.search(text)
    if m is not None:
        bad = "the NUL character" if m.group() == "\x00" else "an unpaired surrogate"
        raise error("bad_literal", f"{what} cannot contain {bad}", loc)


def infer_type(lits: list[Lit], name: str, loc: Loc) -> Type:
    """The type of an unprefixed attribute outside a market: from its literals.

    Mixed numeric kinds widen (int < decimal < float), as ``x BETWEEN 1 AND 2.5``
    is a decimal range; any other mix is an error.
    """
    result: Type | None = None
    first: Lit | None = None
    for lit in lits:
        kind = lit.kind
        if kind is None:
            raise error(
                "needs_type_prefix",
                f"'{name} = *' needs a type prefix, since '*' has no type of its own: "
                f"write for example int {name} = * or string {name} = *",
                loc,
            )
        if result is None or first is None:
            result, first = kind, lit
        elif kind is not result:
            if kind in _NUMERIC_RANK and result in _NUMERIC_RANK:
                if _NUMERIC_RANK[kind] > _NUMERIC_RANK[result]:
                    result = kind
            else:
                raise error(
                    "type_mismatch",
                    f"the values compared with {name} must have one type: {shown(first)} is "
                    f"{kind_name(result)}, {shown(lit)} is {kind_name(kind)}",
                    lit.loc,
                )
    assert result is not None
    return result


def convert(lit: Lit, t: Type, name: str) -> Value | Point | Box:
    """The literal's value as type ``t``, or a ``ConstraintError`` at the literal."""
    kind, raw = lit.kind, lit.raw
    if t is Type.INT:
        if kind is Type.INT:
            if isinstance(raw, str):
                if len(raw) > 20:
                    _out_of_int8(lit, name)
                raw = int(raw)
            if not (isinstance(raw, int) and INT8_MIN <= raw <= INT8_MAX):
                _out_of_int8(lit, name)
            return raw
    elif t is Type.DECIMAL:
        if kind is Type.INT or kind is Type.DECIMAL:
            return _to_decimal(lit)
        if kind is Type.FLOAT:
            hint = ""
            try:
                exact = format(Decimal(str(raw)), "f")
                if len(exact) <= 40:
                    hint = f", as {exact}"
            except (InvalidOperation, ValueError):
                pass
            raise error(
                "type_mismatch",
                f"{name} is a decimal attribute, and a float literal such as {shown(lit)} does "
                f"not fit it: write the number without an exponent{hint}",
                lit.loc,
            )
    elif t is Type.FLOAT:
        if kind is Type.INT or kind is Type.DECIMAL or kind is Type.FLOAT:
            return _to_float(lit, "")
    elif kind is t:
        if t is Type.STRING:
            assert isinstance(raw, str)
            check_text(raw, lit.loc, "a string")
            return raw
        if t is Type.DATE:
            return _to_date(lit)
        if t is Type.TIMESTAMP:
            return _to_timestamp(lit)
        assert isinstance(raw, Point | Box)
        return raw
    if kind is None:
        raise error("syntax", f"'*' (any value) is only written as {name} = *", lit.loc)
    raise error(
        "type_mismatch",
        f"{name} is {kind_name(t)} attribute, "
        f"so it needs {EXAMPLES[t]}, not {kind_name(kind)} like {shown(lit)}",
        lit.loc,
    )


def _out_of_int8(lit: Lit, name: str) -> None:
    raise error(
        "bad_literal",
        f"{shown(lit)} is out of range for the int attribute {name}: ints go from "
        f"{INT8_MIN} to {INT8_MAX}",
        lit.loc,
    )


def _to_decimal(lit: Lit) -> Decimal:
    raw = lit.raw
    try:
        value = raw if isinstance(raw, Decimal) else Decimal(raw)  # type: ignore[arg-type]  # convert() gave a DECIMAL literal its text or number
    except (InvalidOperation, ValueError, TypeError):
        raise error("bad_literal", f"{shown(lit)} is not a number", lit.loc) from None
    if not value.is_finite():
        raise error("bad_literal", "NaN and infinities are not values", lit.loc)
    exponent = value.as_tuple().exponent
    assert isinstance(exponent, int)
    if exponent > 0:
        # From the JSON form (1E+3): give it the digits it would have if written out
        # (through text: quantize() would round to the context's 28 digits).
        value = Decimal(format(value, "f"))
    return value


def _to_date(lit: Lit) -> dt.date:
    return _temporal(
        lit,
        dt.date,
        _DATE_RE,
        lambda m: dt.date(int(m[1]), int(m[2]), int(m[3])),
        "date: write DATE 'YYYY-MM-DD', such as DATE '2026-11-20'",
    )


def _to_timestamp(lit: Lit) -> dt.datetime:
    return _temporal(
        lit,
        dt.datetime,
        _TIMESTAMP_RE,
        _timestamp,
        "timestamp: write TIMESTAMP 'YYYY-MM-DDTHH:MM:SS', "
        "optionally with .ffffff and a zone (Z or +HH:MM; no zone means UTC), "
        "such as TIMESTAMP '2026-11-20T10:00:00Z'",
    )


def _timestamp(m: re.Match[str]) -> dt.datetime:
    """The UTC instant a ``_TIMESTAMP_RE`` match spells (``ValueError`` if there is none)."""
    zone = dt.UTC
    if m[8] not in (None, "Z"):
        hours, minutes = int(m[8][1:3]), int(m[8][4:6])
        if hours > 23 or minutes > 59:
            raise ValueError
        offset = dt.timedelta(hours=hours, minutes=minutes)
        zone = dt.timezone(-offset if m[8][0] == "-" else offset)
    micro = int((m[7] or "0").ljust(6, "0"))
    value = dt.datetime(
        int(m[1]), int(m[2]), int(m[3]), int(m[4]), int(m[5]), int(m[6]), micro, zone
    )
    return value.astimezone(dt.UTC)


def _temporal(
    lit: Lit,
    kind: type[_T],
    pattern: re.Pattern[str],
    build: Callable[[re.Match[str]], _T],
    expected: str,
) -> _T:
    """The date or timestamp ``lit`` spells: taken as it is when the JSON form's reader has
    already converted it to ``kind``, else ``build`` from its text's match of ``pattern``.
    A text that does not match, or names no such day or time, is a ``bad_literal`` error
    that says what was ``expected``."""
    if isinstance(lit.raw, kind):
        return lit.raw
    m = pattern.match(str(lit.raw))
    if m is not None:
        try:
            return build(m)
        except (ValueError, OverflowError):
            pass
    raise error("bad_literal", f"{shown(lit)} is not a valid {expected}", lit.loc)


def coordinate(lit: Lit) -> float:
    """A point or box coordinate: any int, decimal or float literal, finite."""
    if lit.kind not in _NUMERIC_RANK:
        raise error("type_mismatch", f"a coordinate must be a number, not {shown(lit)}", lit.loc)
    return _to_float(lit, "the coordinate ")


def _to_float(lit: Lit, what: str) -> float:
    # Like PostgreSQL's float8 input: what overflows to infinity or underflows to zero is
    # out of range (subnormal numbers are fine).
    raw = lit.raw
    try:
        value = float(raw)  # type: ignore[arg-type]  # a FLOAT literal's raw text or number
    except (OverflowError, ValueError):
        value = math.inf
    if not math.isfinite(value):
        raise error(
            "bad_literal",
            f"{what}{shown(lit)} is too large for a float (the largest is about 1.8e308)",
            lit.loc,
        )
    if value == 0.0 and _nonzero(raw):
        raise error(
            "bad_literal",
            f"{what}{shown(lit)} is too close to zero for a float (the smallest is about 5e-324)",
            lit.loc,
        )
    return value


def bare_value(t: Type, text: str, name: str) -> Value:
    """The value ``text`` spells as one literal of type ``t`` written bare: a number as the
    text syntax writes it, the body of a date or a timestamp (what stands between the quotes
    of ``DATE '...'`` or ``TIMESTAMP '...'``), or a string's content. For inputs that each
    stand for one literal (a form's fields): every rule of the language applies to them, the
    numbers' bounds, int8's range and real days and times included.

    ``ConstraintError`` otherwise (at position 0): ``syntax`` for text that is no number at
    all where a number is wanted, ``type_mismatch`` for a number of another kind (``1.5``
    for an int), ``bad_literal`` for one out of bounds, a day or time that does not exist, or
    a string that cannot be stored.
    """
    lit = _bare_number(text) if t in _NUMERIC_RANK else Lit(t, text, 0)
    value = convert(lit, t, name)
    assert not isinstance(value, Point | Box), t  # no bare form: they are written whole
    return value


def bare_coordinate(text: str) -> float:
    """A point's or a box's coordinate written bare (``12.5``), by the rules of
    ``coordinate``; ``ConstraintError`` as ``bare_value`` says."""
    return coordinate(_bare_number(text))


def _bare_number(text: str) -> Lit:
    if NUMBER_RE.match(text) is None:
        raise error("syntax", f"{abbreviated(text, quoted=True)} is not a number", 0)
    return number_lit(text, 0)


def _nonzero(raw: Raw) -> bool:
    if isinstance(raw, str):
        mantissa = raw.partition("e")[0].partition("E")[0]
        return any(c in "123456789" for c in mantissa)
    return raw != 0


# -- printing -------------------------------------------------------------------------------


def quote_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def format_decimal(value: Decimal) -> str:
    return format(value, "f")


def format_timestamp_body(value: dt.datetime) -> str:
    v = value.astimezone(dt.UTC)
    text = f"{v.year:04d}-{v.month:02d}-{v.day:02d}T{v.hour:02d}:{v.minute:02d}:{v.second:02d}"
    if v.microsecond:
        text += f".{v.microsecond:06d}"
    return text + "Z"


def format_value(t: Type, value: Value) -> str:
    """A value as a literal of the text syntax."""
    if t is Type.INT:
        return str(value)
    if t is Type.DECIMAL:
        assert isinstance(value, Decimal)
        return format_decimal(value)
    if t is Type.FLOAT:
        return repr(float(value))  # type: ignore[arg-type]  # a FLOAT value is a number
    if t is Type.STRING:
        assert isinstance(value, str)
        return quote_string(value)
    if t is Type.DATE:
        assert isinstance(value, dt.date)
        return f"DATE '{value.isoformat()}'"
    assert isinstance(value, dt.datetime)
    return f"TIMESTAMP '{format_timestamp_body(value)}'"


def printed_kind(t: Type, text: str) -> Type:
    """The kind the text syntax would give the literal ``text`` printed for type ``t``."""
    if t is Type.DECIMAL or t is Type.FLOAT:
        return number_kind(text)
    return t


def widen(kinds: list[Type]) -> Type | None:
    """The type inferred for these literal kinds, or ``None`` when they do not mix."""
    result = kinds[0]
    for kind in kinds[1:]:
        if kind is result:
            continue
        if kind in _NUMERIC_RANK and result in _NUMERIC_RANK:
            if _NUMERIC_RANK[kind] > _NUMERIC_RANK[result]:
                result = kind
        else:
            return None
    return result
