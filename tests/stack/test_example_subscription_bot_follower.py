"""The example subscription bot's one rule for printing (``Follower.take``), without a
server: a notification is printed once and in ``n`` order; a replay overlapping what was
printed is dropped, and a gap is filled from the outbox over REST first."""

from __future__ import annotations

from tests.stack.examples import load_example

bot = load_example("subscription_bot")


class Outbox:
    """Stands in for the REST API: notifications 1 to 5 of subscription 7."""

    def __init__(self) -> None:
        self.asked: list[tuple[int, int]] = []

    def missed(self, sub_id: int, after: int) -> list[dict]:
        self.asked.append((sub_id, after))
        return [_note(n) for n in range(after + 1, 6)]


def _note(n: int) -> dict:
    return {"n": n, "seq": 100 + n, "data": {"price": f"1.{n:02d}"}}


def test_a_note_is_printed_once_in_order_and_a_gap_is_filled_from_the_outbox(capsys):
    outbox = Outbox()
    follower = bot.Follower(outbox, [{"id": 7}], count=None)

    for n in (1, 2, 2, 1, 4, 3, 5):  # a replay overlap, then 3 missing before 4
        follower.take("sub:7", _note(n))

    assert capsys.readouterr().out.splitlines() == [
        f'sub:7 n={n} seq={100 + n} {{"price": "1.{n:02d}"}}' for n in range(1, 6)
    ]
    assert outbox.asked == [(7, 2)]
    assert (follower.last, follower.printed) == ({"sub:7": 5}, 5)
