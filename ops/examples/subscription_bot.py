#!/usr/bin/env python3
"""A bot that follows a market through subscriptions (SPEC 8.3): register, follow, resume.

    .venv/bin/python ops/examples/subscription_bot.py --url http://127.0.0.1:8000 \\
        --user buyer1 --password buyer1-demo-2026 --market office.supplies.pencils \\
        --since 1h --jump 5 --watch 60

It logs in for a token and registers two subscriptions over REST:

* a *hybrid* one (form 1 with a start in the past): the market's trades since ``--since``
  ago, sent as history first and then live, with no gap and no duplicate at the seam;
* a *pattern* (form 3): a trade, then a later trade of the market more than ``--jump``
  percent dearer, within an hour.

It follows both ``sub:<id>`` streams on one WebSocket, each with ``resume`` after the last
``n`` it printed (0 at first, so nothing is missed between registering and following), and
prints every notification as ``sub:<id> n=<n> seq=<seq> <data>``. When the socket drops it
connects again and resumes each stream after the last ``n`` it printed, so every
notification is printed exactly once, in order. ``--drop-after K`` closes the socket itself
after K notifications, to show that. A frame whose ``n`` is not the next one is not printed
out of order: the bot reads what it missed from the outbox over REST
(``notifications/?after=``) first. On its way out (``--watch`` seconds are up, ``--count``
notifications were printed, Ctrl-C, an error) it deletes both subscriptions, so that a bot
that is gone leaves nothing running. The protocol is described in docs/api.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from decimal import Decimal, InvalidOperation

import websockets
from _client import ApiSession

JUMP_WITHIN = "1h"


class Api(ApiSession):
    """The subscription calls the bot makes."""

    def register(self, query: str, name: str) -> dict:
        return self._ok(self.http.post("/subscriptions/", json={"query": query, "name": name}))

    def missed(self, sub_id: int, after: int) -> list[dict]:
        """The notifications after ``after``, from the outbox (every page of them)."""
        notes: list[dict] = []
        url: str | None = f"/subscriptions/{sub_id}/notifications/?after={after}"
        while url is not None:
            page = self._ok(self.http.get(url))
            notes.extend(page["results"])
            url = page["next"]
        return notes

    def delete(self, sub_id: int) -> dict:
        """End a subscription (it becomes ``done``, reason ``deleted``)."""
        return self._ok(self.http.delete(f"/subscriptions/{sub_id}/"))


def percent(text: str) -> Decimal:
    """``--jump``: a percentage above 0."""
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value.is_finite() or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give a percentage above 0")
    return value


def queries(market: str, since: str, jump: Decimal) -> list[tuple[str, str]]:
    """``(name, query)`` of the two subscriptions. The subject is a string literal: quotes
    in it would be doubled (subjects have none)."""
    subject = "'" + market.replace("'", "''") + "'"
    trades = f"FILTER{{type = 'trade' AND subject = {subject}}}(EVENTS)"
    factor = format(1 + jump / 100, "f")
    return [
        (
            f"{market} trades since {since} ago",
            f"SELECT price, quantity WHERE type = 'trade', subject = {subject}, "
            f"start_time = NOW - {since}",
        ),
        (
            f"{market} up {jump}% trade to trade",
            f"SELECT a.price, b.price FROM {trades} AS a "
            f"NEXT{{b.price > {factor} * a.price}} {trades} AS b WITHIN {JUMP_WITHIN}",
        ),
    ]


class Follower:
    """Where each followed stream stands: the last ``n`` printed. Printing goes through
    ``take`` only, which is what makes every notification appear once and in order."""

    def __init__(self, api: Api, subs: list[dict], count: int | None) -> None:
        self.api = api
        self.last = {f"sub:{s['id']}": 0 for s in subs}
        self.ended: set[str] = set()
        self.printed = 0
        self.count = count

    def take(self, stream: str, note: dict) -> None:
        """Print a notification that comes next; older ones (a replay overlapping what was
        printed) are dropped, and a gap is filled from the outbox before going on."""
        n = note["n"]
        if n <= self.last[stream]:
            return
        if n > self.last[stream] + 1:
            sub_id = int(stream.partition(":")[2])
            for missed in self.api.missed(sub_id, self.last[stream]):
                if missed["n"] < n:
                    self.take(stream, missed)
        data = json.dumps(note["data"], sort_keys=True)
        print(f"{stream} n={n} seq={note['seq']} {data}", flush=True)
        self.last[stream] = n
        self.printed += 1

    @property
    def finished(self) -> bool:
        enough = self.count is not None and self.printed >= self.count
        return enough or len(self.ended) == len(self.last)


async def follow(
    follower: Follower, ws_url: str, seconds: float, drop_after: int | None, pause: float
) -> None:
    """Follow every stream until ``seconds`` are up or the follower is finished, connecting
    again (and resuming) whenever the socket closes."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    dropped = False
    while not follower.finished and loop.time() < deadline:
        try:
            async with websockets.connect(ws_url) as ws:
                for stream, after in follower.last.items():
                    if stream not in follower.ended:
                        await ws.send(
                            json.dumps({"action": "resume", "stream": stream, "after": after})
                        )
                print(
                    "following " + ", ".join(f"{s} after n={n}" for s, n in follower.last.items()),
                    flush=True,
                )
                while not follower.finished and (left := deadline - loop.time()) > 0:
                    try:
                        frame = json.loads(await asyncio.wait_for(ws.recv(), left))
                    except TimeoutError:
                        break
                    kind, stream = frame.get("type"), frame.get("stream")
                    if kind == "notification":
                        await asyncio.to_thread(follower.take, stream, frame)
                    elif kind == "end":
                        follower.ended.add(stream)
                        print(f"{stream} ended", flush=True)
                    elif kind == "error" and frame.get("code") == "replay_limit":
                        await ws.send(
                            json.dumps(
                                {"action": "resume", "stream": stream, "after": frame["after"]}
                            )
                        )
                    elif kind == "error":
                        raise SystemExit(f"websocket error {frame['code']}: {frame['message']}")
                    if drop_after is not None and not dropped and follower.printed >= drop_after:
                        dropped = True
                        print(
                            f"closing the socket after {follower.printed} notifications", flush=True
                        )
                        break
        except (OSError, websockets.ConnectionClosed) as exc:
            print(f"connection lost ({exc}); connecting again", flush=True)
        if dropped and not follower.finished:
            await asyncio.sleep(pause)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--user", required=True)
    parser.add_argument("--password", required=True)
    parser.add_argument("--market", required=True, help="the market's subject")
    parser.add_argument("--since", default="1h", help="history to start from: 30m, 1h, 2d, ...")
    parser.add_argument(
        "--jump", type=percent, default=Decimal(5), help="the pattern's rise in percent"
    )
    parser.add_argument("--watch", type=float, default=60.0, help="seconds to follow")
    parser.add_argument("--count", type=int, help="stop after printing this many notifications")
    parser.add_argument("--drop-after", type=int, help="close the socket once after this many")
    parser.add_argument("--pause", type=float, default=1.0, help="seconds before reconnecting")
    args = parser.parse_args(argv)

    api = Api(args.url, args.user, args.password)
    subs: list[dict] = []
    try:
        for name, query in queries(args.market, args.since, args.jump):
            sub = api.register(query, name)
            subs.append(sub)
            print(f"registered {sub['stream']} ({sub['kind']}): {sub['query']}", flush=True)
        follower = Follower(api, subs, args.count)
        asyncio.run(follow(follower, api.ws_url, args.watch, args.drop_after, args.pause))
        print(f"printed {follower.printed} notifications", flush=True)
        status = 0
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        status = 130  # as a shell reports an interrupted program
    finally:
        for sub in subs:
            ended = api.delete(sub["id"])
            print(f"on exit: {sub['stream']} is {ended['state']} ({ended['reason']})", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
