"""Turning a feed's rows into orders (SPEC 8.2), each row its own order and its own
transaction, through the order services (``offer_publish``, ``bid_place``).

A row that fails creates nothing and the others go in. A row with a ``ref`` that ``user``
already imported on this side of this market creates nothing and reports the order it made
then, whatever the row says now (as a repeated ``Idempotency-Key`` replays the first answer).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction

from exchange.errors import InvalidInput
from exchange.market_rules import Side
from exchange.models import Market
from exchange.models.adapters import REF_LENGTH, ImportRef
from exchange.selectors.markets import constraint_check, market_schema
from exchange.services.orders import bid_place, offer_publish

from .feeds import Row, RowError
from .maps import FeedMap
from .rows import RowOrder, RowRefused, error_column, row_order

Status = Literal["created", "existing", "failed"]


@dataclass(frozen=True)
class RowResult:
    """What became of one row: ``created`` or ``existing`` with the order's id, or
    ``failed`` with the column, a stable code and a message."""

    row: int
    status: Status
    order_id: int | None = None
    ref: str | None = None
    error: RowError | None = None

    def as_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {"row": self.row, "status": self.status}
        if self.order_id is not None:
            body["id"] = self.order_id
        if self.ref is not None:
            body["ref"] = self.ref
        if self.error is not None:
            body.update(column=self.error.column, code=self.error.code, message=self.error.message)
        return body


def feed_import(
    *, user: User, market: Market, side: Side, rows: Iterable[Row], feed_map: FeedMap
) -> list[RowResult]:
    """Import ``rows`` as ``user``'s offers or bids in ``market``; one result per row, in order."""
    return [_row_import(user, market, side, row, feed_map) for row in rows]


def _row_import(user: User, market: Market, side: Side, row: Row, feed_map: FeedMap) -> RowResult:
    if row.error is not None:
        return RowResult(row.number, "failed", error=row.error)
    ref = row.cells.get(feed_map.ref)
    # Printable: a JSON line may spell a NUL or a line break, which no one means in a ref
    # (and PostgreSQL cannot store a NUL).
    if ref is not None and (len(ref) > REF_LENGTH or not ref.isprintable()):
        return RowResult(
            row.number,
            "failed",
            error=RowError(
                feed_map.ref, "invalid_ref", f"a ref is 1 to {REF_LENGTH} printable characters"
            ),
        )
    lookup = {"user": user, "market": market, "side": side, "ref": ref}
    if ref is not None:
        existing = ImportRef.objects.filter(**lookup).first()
        if existing is not None:
            return RowResult(row.number, "existing", existing.order_id, ref)
    try:
        order = row_order(row, feed_map)
    except RowRefused as exc:
        return RowResult(row.number, "failed", ref=ref, error=exc.error)
    try:
        with transaction.atomic():
            order_id = _place(user, market, side, order)
            if ref is not None:
                key = {"offer_id": order_id} if side == "offer" else {"bid_id": order_id}
                ImportRef.objects.create(**lookup, **key)
    except InvalidInput as exc:
        return RowResult(
            row.number, "failed", ref=ref, error=_located(exc, market, side, order, feed_map)
        )
    except IntegrityError:
        # Another import of the same ref committed first; this row's order was rolled back.
        existing = ImportRef.objects.filter(**lookup).first()
        if existing is None:
            raise
        return RowResult(row.number, "existing", existing.order_id, ref)
    return RowResult(row.number, "created", order_id, ref)


def _place(user: User, market: Market, side: Side, order: RowOrder) -> int:
    if side == "offer":
        return offer_publish(seller=user, market=market, constraint=order.source).pk
    return bid_place(buyer=user, market=market, constraint=order.source).pk


def _located(
    exc: InvalidInput, market: Market, side: Side, order: RowOrder, feed_map: FeedMap
) -> RowError:
    def check(source: dict[str, Any]) -> object:
        return constraint_check(market=market, side=side, source=source)

    column = error_column(
        exc,
        order,
        schema=market_schema(market=market),
        side=side,
        feed_map=feed_map,
        check=check,
    )
    return RowError(column, exc.code, exc.message)
