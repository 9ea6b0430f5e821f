"""How long the AI may think about a move, from the match clock in its view.

Why: the hosted AI must answer inside the clock whatever the level, and a
search that is late loses the game on time. The search gets a share of what
is left, minus a margin for the round trips; the level's iteration budget
still ends it earlier on a fast machine.
"""

from __future__ import annotations

import time

from battleline.v1 import types_pb2

# The answer's way back: the result from the search process, the submit round trip. The
# wait for a search process is bounded by the deadline itself (worker.AiWorker._decide).
MARGIN_S = 0.3
PER_GAME_SHARE = 1 / 15  # of a per-game clock: a game has roughly 20-30 AI decisions
PER_MOVE_SHARE = 0.5  # of a per-move clock: half, the rest is slack for a loaded machine


def remaining_s(view: types_pb2.MatchView) -> float | None:
    """Seconds left on the viewer's clock as the view was written; None without a time
    control. Not from the clock's deadline: that is the engine's time, and an AI host
    whose clock was 10 s ahead of it had nothing left of a 10 s move (thirty-fifth
    audit); a view is read within milliseconds of its writing."""
    for clock in view.clocks:
        if clock.seat == view.viewer:
            return clock.remaining.ToNanoseconds() / 1e9
    return None


def move_deadline(view: types_pb2.MatchView, cap_s: float, now: float | None = None) -> float:
    """Wall-clock time (epoch seconds) by which the move must be chosen."""
    now = time.time() if now is None else now
    left = remaining_s(view)
    if left is None:
        return now + cap_s
    per_game = view.options.time_control.kind == types_pb2.TIME_CONTROL_KIND_PER_GAME
    share = left * (PER_GAME_SHARE if per_game else PER_MOVE_SHARE)
    return now + max(0.0, min(cap_s, share - MARGIN_S))
