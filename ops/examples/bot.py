#!/usr/bin/env python3
"""A small trading bot for Intersect: the REST API to trade, the WebSocket to follow.

    .venv/bin/python ops/examples/bot.py --url http://127.0.0.1:8000 \\
        --user buyer1 --password buyer1-demo-2026 --market office.supplies.pencils \\
        --constraint "lot IN [2000, 5000] AND price <= 1.10" --raise-to 1.20 --watch 20

It logs in for a token, reads the market's schema, places a bid, amends it once (raising the
price bound when ``--raise-to`` is given), and then prints its standing (which offers its bid
matches and where it is best) each time a personal notification arrives on the WebSocket,
for ``--watch`` seconds. On its way out, however it ends (the time is up, Ctrl-C, an error),
it withdraws the bid it placed unless ``--keep`` is given: a bot that is gone must not leave
a bid that can still fill. Exit status 0 when it ended as the best bidder somewhere, else 1.
The protocol it uses is described in docs/api.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys

import websockets
from _client import ApiSession


class Bot(ApiSession):
    """The bid calls the bot makes."""

    def schema(self, market: str) -> dict:
        return self._ok(self.http.get(f"/markets/{market}/"))

    def bid(self, market: str, constraint: str) -> dict:
        return self._ok(self.http.post("/bids/", json={"market": market, "constraint": constraint}))

    def amend(self, bid: dict, constraint: str) -> dict:
        return self._ok(
            self.http.patch(
                f"/bids/{bid['id']}/", json={"constraint": constraint, "version": bid["version"]}
            )
        )

    def standing(self, bid_id: int) -> dict:
        return self._ok(self.http.get(f"/bids/{bid_id}/"))

    def withdraw(self, bid_id: int) -> dict:
        """Withdraw a bid; one that already filled stays filled (a 400 ``not_active``)."""
        response = self.http.post(f"/bids/{bid_id}/withdraw/")
        if response.status_code == 400 and response.json()["error"]["code"] == "not_active":
            return self.standing(bid_id)
        return self._ok(response)


def describe(bid: dict) -> str:
    if not bid["matches"]:
        return f"bid {bid['id']} v{bid['version']} ({bid['state']}): matches no open offer yet"
    parts = [
        f"offer {m['offer']} at {m['value']}{' (best)' if m['best'] else ''}"
        for m in bid["matches"]
    ]
    return f"bid {bid['id']} v{bid['version']} ({bid['state']}): " + ", ".join(parts)


async def trade(
    bot: Bot, market: str, constraint: str, raised: str | None, seconds: float, placed: list[int]
) -> dict:
    """Follow ``me`` first (so no notification slips by), then bid, amend, and listen. The
    bid's id goes into ``placed`` as soon as it exists, for the caller to withdraw."""
    async with websockets.connect(bot.ws_url) as ws:
        await ws.send(json.dumps({"action": "subscribe", "stream": "me"}))
        json.loads(await ws.recv())  # {"type": "subscribed", "stream": "me"}
        bid = await asyncio.to_thread(bot.bid, market, constraint)
        placed.append(bid["id"])
        print(f"placed bid {bid['id']}: {bid['constraint']}", flush=True)
        if raised is not None:
            bid = await asyncio.to_thread(bot.amend, bid, raised)
            print(f"amended to v{bid['version']}: {bid['constraint']}", flush=True)
        standing = await asyncio.to_thread(bot.standing, bid["id"])
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        while (left := deadline - loop.time()) > 0:
            try:
                frame = json.loads(await asyncio.wait_for(ws.recv(), left))
            except TimeoutError:
                break
            if frame.get("stream") == "me" and frame.get("type") == "notification":
                data = frame["data"]
                print(
                    f"notification #{frame['seq']}: {data['type']} on offer {data.get('offer')}"
                    f" best value {data.get('best_value')}",
                    flush=True,
                )
                standing = await asyncio.to_thread(bot.standing, bid["id"])
                print(describe(standing), flush=True)
    return standing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--user", required=True)
    parser.add_argument("--password", required=True)
    parser.add_argument("--market", required=True)
    parser.add_argument(
        "--constraint", required=True, help="the bid, e.g. 'lot = 10 AND price <= 1.10'"
    )
    parser.add_argument("--raise-to", help="amend the bid's price bound to this value")
    parser.add_argument("--watch", type=float, default=10.0, help="seconds to follow the WebSocket")
    parser.add_argument(
        "--keep", action="store_true", help="leave the bid live on exit (default: withdraw it)"
    )
    args = parser.parse_args(argv)

    bot = Bot(args.url, args.user, args.password)
    market = bot.schema(args.market)
    price = next(a["name"] for a in market["schema"] if a["role"] == "price")
    print(
        f"market {market['subject']}: "
        + ", ".join(f"{a['name']} ({a['type']})" for a in market["schema"])
        + f"; tick {market['tick']}, {market['pricing']}-price auctions",
        flush=True,
    )
    raised = None
    if args.raise_to:
        raised = re.sub(
            rf"\b{price}\s*(<=|<)\s*[0-9.]+", f"{price} <= {args.raise_to}", args.constraint
        )
    placed: list[int] = []
    try:
        standing = asyncio.run(trade(bot, args.market, args.constraint, raised, args.watch, placed))
        print("final: " + describe(standing), flush=True)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        standing = None
    finally:
        for bid_id in placed if not args.keep else []:
            ended = bot.withdraw(bid_id)
            print(f"on exit: bid {bid_id} is {ended['state']}", flush=True)
    if standing is None:
        return 130  # as a shell reports an interrupted program
    return 0 if any(m["best"] for m in standing["matches"]) else 1


if __name__ == "__main__":
    sys.exit(main())
