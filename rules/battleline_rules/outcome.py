"""How a game ended and for whom, as the rules core alone decides it (python-chess's
`Board.outcome()`): engines and bots read it instead of working it out again."""

from __future__ import annotations

from enum import Enum
from typing import NamedTuple


class Termination(Enum):
    """Why a game ended."""

    BREAKTHROUGH = "breakthrough"  # a run of adjacent flags (3)
    ENVELOPMENT = "envelopment"  # enough flags anywhere (5; deck52: 4)
    FLANKS = "flanks"  # deck52: both flags at one end of the line
    STALEMATE = "stalemate"  # two idle turns: settled by the flags held (or drawn)
    RESIGNATION = "resignation"  # a seat gave up (the engine's timeouts resign too)


class Outcome(NamedTuple):
    """The end of a game: ``winner`` is a seat, or None for a draw (a stalemate only)."""

    termination: Termination
    winner: int | None
