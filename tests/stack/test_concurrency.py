"""24 clients amending and withdrawing the same offers and bids while staff close auctions
(SPEC 9): no lost update, no deadlock, exactly one trade per closed auction, and a best-offer
table equal to a recomputation."""

from __future__ import annotations

import random
import threading
from collections import Counter

import httpx
import pytest
from rest_framework.authtoken.models import Token

from exchange.models import Bid, Offer, Trade
from exchange.services.orders import bid_place, offer_publish
from exchange.services.verification import best_offers_verify
from tests.factories import StaffFactory, UserFactory, pencils_market
from tests.stack.test_faults import settled
from tests.stack.test_matching_worker import wait_for

pytestmark = [pytest.mark.stack, pytest.mark.usefixtures("clean_engine")]

CLIENTS = 24
ROUNDS = 12


def test_concurrent_amends_withdrawals_and_closes(live_stack):
    market = pencils_market(pricing="second")
    sellers = [UserFactory(username=f"seller{i}") for i in range(3)]
    buyers = [UserFactory(username=f"buyer{i}") for i in range(6)]
    staff = StaffFactory(username="closer")
    offers = [
        offer_publish(
            seller=sellers[i % 3],
            market=market,
            constraint=f"lot BETWEEN 1 AND 50 AND price >= 1.0{i % 5}",
        )
        for i in range(6)
    ]
    bids = [
        bid_place(
            buyer=buyers[i % 6], market=market, constraint=f"lot = {i + 1} AND price <= 1.{20 + i}"
        )
        for i in range(12)
    ]
    tokens = {
        u.username: Token.objects.get_or_create(user=u)[0].key for u in [*sellers, *buyers, staff]
    }
    wait_for(settled, "the initial cycles")

    owner = {("offers", o.pk): o.seller.username for o in offers} | {
        ("bids", b.pk): b.buyer.username for b in bids
    }
    amended: Counter = Counter()
    statuses: Counter = Counter()
    problems: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(CLIENTS + 2)

    def api(user: str) -> httpx.Client:
        return httpx.Client(
            base_url=live_stack.url + "/api/v1",
            timeout=60,
            headers={"Authorization": f"Token {tokens[user]}"},
        )

    def note(response: httpx.Response, what: str) -> None:
        with lock:
            statuses[response.status_code] += 1
            if response.status_code >= 500 or response.status_code in (401, 403, 404):
                problems.append(f"{what}: {response.status_code} {response.text[:200]}")

    def client(seed: int) -> None:
        rng = random.Random(seed)
        start.wait()
        for _ in range(ROUNDS):
            kind, pk = rng.choice(list(owner))
            http = api(owner[(kind, pk)])
            try:
                current = http.get(f"/{kind}/{pk}/").json()
                if rng.random() < 0.06:
                    response = http.post(f"/{kind}/{pk}/withdraw/")
                    note(response, f"withdraw {kind} {pk}")
                    continue
                price = f"1.{rng.randint(10, 60):02d}"
                text = (
                    f"lot BETWEEN 1 AND 50 AND price >= {price}"
                    if kind == "offers"
                    else f"lot = {rng.randint(1, 50)} AND price <= {price}"
                )
                response = http.patch(
                    f"/{kind}/{pk}/", json={"constraint": text, "version": current["version"]}
                )
                note(response, f"amend {kind} {pk}")
                if response.status_code == 200:
                    with lock:
                        amended[(kind, pk)] += 1
            except httpx.TimeoutException as exc:  # a hang would be a deadlock
                with lock:
                    problems.append(f"timeout: {exc}")
            finally:
                http.close()

    def closer() -> None:
        http = api("closer")
        start.wait()
        for offer in offers[:4] * 2:  # every close twice: the second must return the first result
            response = http.post(f"/offers/{offer.pk}/close/")
            if response.status_code not in (200, 400):  # 400: withdrawn before staff got to it
                problems.append(f"close {offer.pk}: {response.status_code} {response.text[:200]}")
        http.close()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
    threads += [threading.Thread(target=closer), threading.Thread(target=closer)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert not any(t.is_alive() for t in threads), "a client never finished"
    assert problems == []
    assert set(statuses) <= {200, 409, 400}, statuses
    assert statuses[409] > 0  # the clients really did collide

    # No lost update: every order's version counts exactly its successful amendments.
    for kind, pk in owner:
        model = Offer if kind == "offers" else Bid
        assert model.objects.get(pk=pk).version == 1 + amended[(kind, pk)], (kind, pk)

    # Exactly one trade per closed, sold auction; every filled bid has its trade.
    for offer in Offer.objects.filter(pk__in=[o.pk for o in offers]):
        assert Trade.objects.filter(offer=offer).count() <= 1
        if offer.state != "closed":
            assert not Trade.objects.filter(offer=offer).exists()
    assert Bid.objects.filter(state="filled").count() == Trade.objects.count()
    assert Offer.objects.filter(state="closed").count() >= 1

    wait_for(settled, "every change processed")
    assert best_offers_verify().clean
