"""Reading a legacy feed into rows: CSV with a header line, or JSON lines (one object per
line). The whole feed is read before any row is imported, so a problem with the file as a
whole (not UTF-8, a quote never closed, too many rows) refuses it and creates nothing.

A row's number is the line of the file where it starts, as an editor counts (the CSV header
is line 1). A row that cannot be read on its own (a line that is not a JSON object, a CSV
row with more cells than the header) is a failed row; the others still go in.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field

from exchange.errors import ExchangeError
from exchange.http import json_bounded

from .maps import FeedMap

# A row of a JSON-lines feed is one flat object ({"ref": ..., "lot_min": ...}); one level
# more is read so that a nested value is refused by its column's name.
_ROW_DEPTH = 2
# Where a problem concerns the whole row rather than one of its columns.
WHOLE_ROW = "-"


class FeedError(Exception):
    """The feed as a whole cannot be imported; ``row`` is where reading stopped, if anywhere."""

    def __init__(self, code: str, message: str, *, row: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.row = row


class FeedTooLarge(FeedError):
    """More rows than one import takes."""


@dataclass(frozen=True)
class Row:
    """One record: its non-empty cells by column name (text, surrounding spaces removed),
    or the reason it could not be read."""

    number: int
    cells: dict[str, str] = field(default_factory=dict)
    error: RowError | None = None


@dataclass(frozen=True)
class RowError:
    """Why a row could not be read: the column at fault (``WHOLE_ROW`` for the row as a
    whole), a stable code and a message for people."""

    column: str
    code: str
    message: str


def feed_rows(
    data: bytes, *, fmt: str, feed_map: FeedMap, max_rows: int | None = None
) -> list[Row]:
    """The rows of ``data`` in format ``fmt`` (``csv`` or ``jsonl``); ``FeedError`` if the
    feed cannot be read as a whole, ``FeedTooLarge`` past ``max_rows`` rows."""
    try:
        # utf-8-sig: spreadsheets often start a CSV export with a byte order mark.
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise FeedError("bad_encoding", "the feed is not UTF-8 text", row=line) from None
    if "\x00" in text:
        line = text[: text.index("\x00")].count("\n") + 1
        raise FeedError("bad_feed", "the feed contains a NUL character", row=line)
    rows = _csv_rows(text, feed_map) if fmt == "csv" else _jsonl_rows(text)
    if max_rows is not None and len(rows) > max_rows:
        raise FeedTooLarge(
            "too_many_rows",
            f"one import takes at most {max_rows} rows; split the feed",
            row=rows[max_rows].number,
        )
    return rows


def _csv_rows(text: str, feed_map: FeedMap) -> list[Row]:
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=feed_map.delimiter, strict=True)
    rows: list[Row] = []
    header: list[str] | None = None
    start = 1
    try:
        for record in reader:
            number, start = start, reader.line_num + 1
            if not any(cell.strip() for cell in record):
                continue  # blank lines separate nothing in a CSV feed
            if header is None:
                header = _header(record, feed_map, number)
                continue
            if len(record) > len(header):
                rows.append(
                    Row(
                        number,
                        error=RowError(
                            WHOLE_ROW,
                            "too_many_cells",
                            f"this row has {len(record)} cells; the header names {len(header)} columns",
                        ),
                    )
                )
                continue
            cells = {name: cell.strip() for name, cell in zip(header, record, strict=False)}
            rows.append(Row(number, {name: cell for name, cell in cells.items() if cell}))
    except csv.Error as exc:
        raise FeedError("bad_csv", f"not CSV: {exc}", row=start) from None
    if header is None:
        raise FeedError("empty_feed", "the feed has no header line naming its columns")
    return rows


def _header(record: list[str], feed_map: FeedMap, number: int) -> list[str]:
    names = [cell.strip() for cell in record]
    seen: set[str] = set()
    for name in names:
        if not name:
            raise FeedError("bad_header", "a column of the header has no name", row=number)
        if name in seen:
            raise FeedError("bad_header", f"the header names {name} twice", row=number)
        seen.add(name)
    # The ref and the default map's columns may be absent; columns an explicit map names may not.
    wanted = [c for c in feed_map.columns if c != feed_map.ref]
    if feed_map.explicit:
        missing = [c for c in wanted if c not in seen]
        if missing:
            raise FeedError(
                "missing_column",
                f"the map reads the column {missing[0]}, which the header does not name",
                row=number,
            )
    return names


def _jsonl_rows(text: str) -> list[Row]:
    rows: list[Row] = []
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            obj = json_bounded(line, max_depth=_ROW_DEPTH, what="This line")
        except ExchangeError as exc:
            rows.append(Row(number, error=RowError(WHOLE_ROW, exc.code, exc.message)))
            continue
        if not isinstance(obj, dict):
            rows.append(
                Row(
                    number,
                    error=RowError(WHOLE_ROW, "not_an_object", "each line must be a JSON object"),
                )
            )
            continue
        rows.append(_json_row(number, obj))
    return rows


def _json_row(number: int, obj: dict) -> Row:
    cells: dict[str, str] = {}
    for name, value in obj.items():
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            return Row(
                number,
                error=RowError(name, "bad_value", "a value is text or a number"),
            )
        text = value.strip() if isinstance(value, str) else repr(value)
        if text:
            cells[name] = text
    return Row(number, cells)
