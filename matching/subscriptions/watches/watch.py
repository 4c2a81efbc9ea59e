"""Form 4's engine: a watch over the open offers (SPEC 8.3, seed 002's range-min).

The engine keeps the open offers (``offers.OpenOffers``) and, for a range watch, the
offers that qualify (the subject test and every key test hold and the selected
attribute is present) in a sorted list by ``(value, offer)`` (``(-value, offer)`` for
``MAX``), so each event costs a logarithmic update and the answer is the list's first
entry: the lowest (highest) value, ties to the lower offer id. A single-offer watch
reads its offer directly. Each event changes at most one offer, so only that offer's
entry is touched.

Notifications (numbering is the ``Subscription``'s): one at registration
(``register``) with the answer at that moment, then after every event whose answer
differs from the last one notified under the rule of ``changed``. The data is
``{"offer": id, "value": v}`` with ``v`` as the event carried it, or ``{"offer": None}``.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from sortedcontainers import SortedList

from matching.subscriptions.events import Event
from matching.subscriptions.language.model import Threshold, WatchQuery
from matching.subscriptions.run.predicates import passes

from .offers import OpenOffer, OpenOffers


@dataclass(frozen=True)
class Answer:
    """The watched offer and its value: ``value`` typed, ``shown`` as the event carried it."""

    offer: int
    value: Any
    shown: Any

    def data(self) -> dict[str, Any]:
        return {"offer": self.offer, "value": self.shown}


def answer_data(answer: Answer | None) -> dict[str, Any]:
    return {"offer": None} if answer is None else answer.data()


def changed(last: Answer | None, new: Answer | None, threshold: Threshold | None) -> bool:
    """Whether ``new`` is notified after ``last`` (SPEC 8.3).

    Between none and a value: always. Without a threshold: when the offer or the value
    (compared as numbers) differs. With one: when ``|v - v_last| > x``, or for ``x%``
    when ``|v - v_last| > x/100 * |v_last|`` (so from 0, any move notifies), whichever
    offer holds the value; a change of offer within the threshold is not notified.
    """
    if last is None or new is None:
        return (last is None) != (new is None)
    if threshold is None:
        return (new.offer, new.value) != (last.offer, last.value)
    move = abs(Decimal(new.value) - Decimal(last.value))
    if threshold.percent:
        return move * 100 > threshold.amount * abs(Decimal(last.value))
    return move > threshold.amount


class WatchEngine:
    """Answers one event at a time with ``(seq, data)`` pairs once registered."""

    kept_events = 0  # the open offers are the market's state, not events the watch holds
    kept_bytes = 0

    def __init__(self, q: WatchQuery) -> None:
        self.q = q
        self.offers = OpenOffers()
        self.tests = q.tests
        self.ranked: SortedList = SortedList()
        self.rank_of: dict[int, tuple[Any, int]] = {}
        self.registered = False
        self.last_seq: int | None = None
        self.last: Answer | None = None
        # ``shared``: the open offers are held once for many watches, by the subscription
        # engine's ``WatchHub`` (``matching/dissemination/hosted.py``), and ``offers`` is
        # empty here; a snapshot then leaves them out (``run/snapshot.py``). ``borrowed``:
        # ``offers`` are another's, held by many watches at once (a checkpoint's shared
        # open offers, read once for all the watches restored from it, or the book the
        # engine's catching-up watches follow together, ``hosted.advance_watches``): never
        # changed here, but copied before this engine changes them alone (``_own``).
        # ``unranked``: ``ranked`` is not built for ``offers`` (a watch still in its
        # history needs no answer): built when an answer is first asked (``rank``).
        # ``whole``: ``offers`` hold every offer event the watch was pushed, so are the
        # log's open offers where it stands, a book other watches may take up; not once a
        # ``SubscriptionSet`` pushes it only its subject's (``multi.py``).
        self.shared = False
        self.borrowed = False
        self.unranked = False
        self.whole = True

    def _own(self) -> None:
        if self.borrowed:
            self.borrowed = False
            self.offers = self.offers.copy()
            self.unranked = True

    def follow(self, offers: OpenOffers) -> None:
        """Hold ``offers``, a book that others hold too and that its owner advances
        (``hosted.advance_watches``): the open offers where this watch stands, so a
        ranking built stands; one still in its history leaves it to its registration."""
        self.offers, self.borrowed, self.whole = offers, True, True
        if not self.registered:
            self.unranked = True

    def rank(self) -> None:
        """The ranking built afresh from ``offers``."""
        self.ranked.clear()
        self.rank_of.clear()
        self.unranked = False
        if self.q.func is not None:
            for offer in self.offers.offers:
                self._rerank(offer)

    def event(self, e: Event) -> list[tuple[int | None, dict[str, Any]]]:
        self._own()
        return self.moved(e, self.offers.apply(e))

    def moved(self, e: Event, offer: int | None) -> list[tuple[int | None, dict[str, Any]]]:
        """``event`` once ``offers`` have applied ``e``, which changed ``offer`` (None: no
        offer): the ranking follows, and a registered watch answers."""
        self.last_seq = e.seq
        if offer is not None and self.q.func is not None and not self.unranked:
            self._rerank(offer)
        if not self.registered:
            return []
        new = self.answer()
        if not changed(self.last, new, self.q.threshold):
            return []
        self.last = new
        return [(e.seq, answer_data(new))]

    def register(self) -> list[tuple[int | None, dict[str, Any]]]:
        """The first notification: the answer now, at the last event seen (``None`` if none)."""
        self.registered = True
        self.last = self.answer()
        return [(self.last_seq, answer_data(self.last))]

    def answer(self) -> Answer | None:
        if self.unranked:
            self.rank()
        q = self.q
        if q.func is None:
            assert q.offer is not None
            return self._answer_of(q.offer, self.offers.get(q.offer))
        if not self.ranked:
            return None
        _, offer = self.ranked[0]
        return self._answer_of(offer, self.offers.get(offer))

    def _answer_of(self, offer: int, row: OpenOffer | None) -> Answer | None:
        if row is None or self.q.attribute not in row.values:
            return None
        return Answer(offer, row.values[self.q.attribute], row.shown[self.q.attribute])

    def _rerank(self, offer: int) -> None:
        old = self.rank_of.pop(offer, None)
        if old is not None:
            self.ranked.remove(old)
        row = self.offers.get(offer)
        if row is None or not self.qualifies(row):
            return
        value = row.values[self.q.attribute]
        rank = (value if self.q.func == "MIN" else -value, offer)  # type: ignore[operator]  # MIN and MAX watch numbers
        self.rank_of[offer] = rank
        self.ranked.add(rank)

    def qualifies(self, row: OpenOffer) -> bool:
        """The offer is in the watch's range and has the selected attribute."""
        return self.q.attribute in row.values and all(passes(t, row.values) for t in self.tests)
