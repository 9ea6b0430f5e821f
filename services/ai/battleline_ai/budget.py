"""How long the AI may think about a move, from the match clock in its view.

Why: the hosted AI must answer inside the clock whatever the level, and a
search that is late loses the game on time. The search gets a share of what
is left, minus a margin for the round trips; the level's iteration budget
still ends it earlier on a fast machine.
"""

from __future__ import annotations

from battleline.v1 import types_pb2

# The answer's way back: the result from the search process, the submit round trip. The
# wait for a search process is bounded by the deadline itself (worker.AiWorker._decide).
MARGIN_S = 0.3
PER_GAME_SHARE = 1 / 15  # of a per-game clock: a game has roughly 20-30 AI decisions
PER_MOVE_SHARE = 0.5  # of a per-move clock: half, the rest is slack for a loaded machine


def remaining_s(view: types_pb2.MatchView, store_now_s: float) -> float | None:
    """Seconds left on the viewer's clock at `store_now_s`, the store's time (which the
    engines keep, and the AI worker too); None without a time control. A running clock's
    deadline is on that time: an AI host that read it against its own clock, 10 s ahead,
    had nothing of a 10 s move (thirty-fifth audit), and one that took the remaining time
    as the view was written gave a view read 1.3 s late a search that answered after its
    2 s move (the audit's re-test)."""
    for clock in view.clocks:
        if clock.seat != view.viewer:
            continue
        remaining = clock.remaining.ToNanoseconds() / 1e9
        if clock.running and clock.HasField("deadline"):
            return max(0.0, min(remaining, clock.deadline.ToNanoseconds() / 1e9 - store_now_s))
        return remaining
    return None


def move_deadline(view: types_pb2.MatchView, cap_s: float, now: float,
                  store_now_s: float) -> float:
    """When (`time.monotonic()`, `now` being its reading) the move must be chosen; the
    store's time is `store_now_s` (`remaining_s`)."""
    left = remaining_s(view, store_now_s)
    if left is None:
        return now + cap_s
    per_game = view.options.time_control.kind == types_pb2.TIME_CONTROL_KIND_PER_GAME
    share = left * (PER_GAME_SHARE if per_game else PER_MOVE_SHARE)
    return now + max(0.0, min(cap_s, share - MARGIN_S))
