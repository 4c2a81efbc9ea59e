"""A client following ``sub:<id>`` streams on one WebSocket, and the spread of the delays it
saw: what the alerts benchmark (``alerts.py``) and the fairness one (``fairness.py``)
share."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from websockets.sync.client import connect

# A notification frame as the follower saw it: its subscription, its seq, its arrival
# (Unix time, this process's clock).
Frame = tuple[int, int, float]


def follow(
    ws_url: str, token: str, subs: list[int], frames: list[Frame], *, confirm_seconds: float = 60
) -> Any:
    """One socket following ``sub:<id>`` of each of ``subs`` as ``token``'s user, returned
    once every stream is confirmed; a thread appends each notification frame to
    ``frames`` until the socket closes (the caller closes it)."""
    socket = connect(f"{ws_url}?token={token}", open_timeout=30, max_size=None)
    confirmed = threading.Event()
    count = [0]
    for sub in subs:
        socket.send(json.dumps({"action": "subscribe", "stream": f"sub:{sub}"}))

    def read() -> None:
        try:
            for message in socket:
                at = time.time()
                frame = json.loads(message)
                if frame.get("type") == "subscribed":
                    count[0] += 1
                    if count[0] == len(subs):
                        confirmed.set()
                elif frame.get("type") == "notification" and frame.get("seq") is not None:
                    frames.append((stream_id(str(frame.get("stream", ""))), int(frame["seq"]), at))
        except Exception:  # the socket closed at the end of the run
            return

    threading.Thread(target=read, daemon=True).start()
    if not confirmed.wait(confirm_seconds):
        socket.close()
        raise RuntimeError(
            f"only {count[0]} of {len(subs)} sub: streams confirmed in {confirm_seconds:g} s"
        )
    return socket


def stream_id(stream: str) -> int:
    """The subscription of a ``sub:<id>`` stream's name; 0 for any other stream."""
    prefix, _, rest = stream.partition(":")
    return int(rest) if prefix == "sub" and rest.isdigit() else 0


def quantiles(values: list[float]) -> dict[str, float | None]:
    """p50, p99 and the largest of ``values`` (seconds) in milliseconds, to 0.1 ms; None
    each when there are none."""
    if not values:
        return {"p50_ms": None, "p99_ms": None, "max_ms": None}
    ordered = sorted(values)

    def q(p: float) -> float:
        return round(1000 * ordered[min(len(ordered) - 1, int(p * len(ordered)))], 1)

    return {"p50_ms": q(0.5), "p99_ms": q(0.99), "max_ms": round(1000 * ordered[-1], 1)}
