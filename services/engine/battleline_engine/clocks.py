"""Time controls: who is on the clock, and when it runs out. Pure; no I/O.

The running clock is stored as `turn` = "<seat>:<ply>:<start ms>" and, for a
per-game control, `rem` = "<ms0>,<ms1>" (time left at the start of the
running turn). A new turn starts whenever the seat to act or the ply changes;
the previous seat is then charged for the time it used. The deadline (start +
budget) goes to the match hash and the sweeper's sorted set in the same commit.
"""

from __future__ import annotations

from dataclasses import dataclass

from battleline_rules import GameState

from .model import ClockKind, Meta


@dataclass(frozen=True, slots=True)
class ClockState:
    """The stored clock of a match."""

    seat: int = -1  # -1: no clock running
    ply: int = -1
    start_ms: int = 0
    remaining_ms: tuple[int, int] = (0, 0)  # per-game budget left, at turn start

    @classmethod
    def parse(cls, fields: dict[str, str]) -> ClockState:
        turn = fields.get("turn", "")
        rem = fields.get("rem", "0,0").split(",")
        remaining = (int(rem[0]), int(rem[1]))
        if not turn:
            return cls(remaining_ms=remaining)
        seat, ply, start = (int(x) for x in turn.split(":"))
        return cls(seat, ply, start, remaining)

    def fields(self) -> dict[str, str]:
        turn = "" if self.seat < 0 else f"{self.seat}:{self.ply}:{self.start_ms}"
        return {"turn": turn, "rem": f"{self.remaining_ms[0]},{self.remaining_ms[1]}"}

    def budget_ms(self, meta: Meta, seat: int) -> int:
        """Time `seat` has for its turn when it starts: never more than the control's
        (an engine of an earlier release, which kept its machine's clock, could leave
        more: thirty-sixth audit)."""
        if meta.clock == ClockKind.PER_GAME:
            return min(self.remaining_ms[seat], meta.clock_ms)
        return meta.clock_ms

    def deadline_ms(self, meta: Meta) -> int:
        """When the running clock runs out (0: none running)."""
        if self.seat < 0 or meta.clock == ClockKind.NONE:
            return 0
        return self.start_ms + self.budget_ms(meta, self.seat)


def start_clock(meta: Meta) -> ClockState:
    """A clock before the first turn (per-game budgets full)."""
    budget = meta.clock_ms if meta.clock == ClockKind.PER_GAME else 0
    return ClockState(remaining_ms=(budget, budget))


def advance(
    meta: Meta, clock: ClockState, state: GameState, running: bool, now_ms: int
) -> ClockState:
    """The clock after a commit that leaves `state`; `running` False stops it."""
    if meta.clock == ClockKind.NONE:
        return clock
    key = (state.current_player, state.ply) if running and not state.is_over else None
    if key is not None and key == (clock.seat, clock.ply):
        return clock  # the same turn goes on: the clock keeps running
    remaining = list(clock.remaining_ms)
    if clock.seat >= 0 and meta.clock == ClockKind.PER_GAME:
        used = max(0, now_ms - clock.start_ms)  # never a gain, whatever a clock did
        remaining[clock.seat] = max(0, remaining[clock.seat] - used)
    rem = (remaining[0], remaining[1])
    if key is None:
        return ClockState(remaining_ms=rem)
    return ClockState(key[0], key[1], now_ms, rem)


def left_ms(meta: Meta, clock: ClockState, seat: int, now_ms: int) -> int:
    """Time `seat` has left now (of the running move, or its budget when not running)."""
    if seat == clock.seat:
        left = clock.deadline_ms(meta) - now_ms
        return min(clock.budget_ms(meta, seat), max(0, left))  # never more than it had
    return clock.budget_ms(meta, seat)
