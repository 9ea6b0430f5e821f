"""How long the AI may think about a move, from the match clock in its view.

Why: the hosted AI must answer inside the clock whatever the level, and a
search that is late loses the game on time. The search gets a share of what
is left, minus a margin for the round trips; the level's iteration budget
still ends it earlier on a fast machine.
"""

from __future__ import annotations

from collections import deque

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
    audit); how late the view came is `ViewLag`'s."""
    for clock in view.clocks:
        if clock.seat == view.viewer:
            return clock.remaining.ToNanoseconds() / 1e9
    return None


class ViewLag:
    """How much later than usual a view was read: a view read 1.3 s after it was written
    (a stalled worker, a stream's backlog) left a 2 s move 0.7 s, and a search given the
    whole of it answered late (a re-test of the thirty-fifth audit).

    A running clock's deadline less its remaining time is when the engine wrote the
    view, on the engine's clock; read against this host's, the gap is the two clocks'
    difference plus the view's delay. The least gap of the last `window` views stands
    for the clocks' difference (their delay is a few milliseconds), so what a view's gap
    has beyond it is its own lateness. A host clock stepped forward reads as lateness
    until the window forgets it: a move thought shorter, never a move late."""

    def __init__(self, window: int = 32) -> None:
        self._gaps: deque[float] = deque(maxlen=window)

    def of(self, view: types_pb2.MatchView, wall_now: float) -> float:
        """Seconds `view` came late, read at `wall_now` (`time.time()`)."""
        written = _written_s(view)
        if written is None:
            return 0.0
        gap = wall_now - written
        self._gaps.append(gap)
        return gap - min(self._gaps)


def _written_s(view: types_pb2.MatchView) -> float | None:
    """When the engine wrote `view` (its clock, epoch seconds), if a clock runs in it."""
    for clock in view.clocks:
        if clock.running and clock.HasField("deadline"):
            return (clock.deadline.ToNanoseconds() - clock.remaining.ToNanoseconds()) / 1e9
    return None


def move_deadline(view: types_pb2.MatchView, cap_s: float, now: float,
                  late_s: float = 0.0) -> float:
    """When (`time.monotonic()`, `now` being its reading) the move must be chosen, for a
    view read `late_s` later than usual (`ViewLag`)."""
    left = remaining_s(view)
    if left is None:
        return now + cap_s
    left = max(0.0, left - late_s)
    per_game = view.options.time_control.kind == types_pb2.TIME_CONTROL_KIND_PER_GAME
    share = left * (PER_GAME_SHARE if per_game else PER_MOVE_SHARE)
    return now + max(0.0, min(cap_s, share - MARGIN_S))
