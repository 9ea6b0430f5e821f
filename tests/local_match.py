"""Driving a LOCAL match from both its seats, one turn at a time: for the tests that play
on to a wanted position, or look at every position on the way."""

from __future__ import annotations

from collections.abc import Iterator

from battleline.v1 import types_pb2
from battleline_client.client import Seat
from battleline_client.common import is_finished, is_my_turn


def turns(seats: list[Seat]) -> Iterator[tuple[Seat, types_pb2.MatchView]]:
    """Each turn until the game is over: the seat to act and its view. The caller makes
    the move (or stops)."""
    while not is_finished(view := seats[0].view()):
        mover = seats[0] if is_my_turn(view) else seats[1]
        yield mover, view if mover is seats[0] else mover.view()
