"""Match series scoring (seeds 000 and 001): winner 5, loser its flags, winner starts next."""

from __future__ import annotations

import pytest

from battleline_rules import (
    Options,
    dump_position,
    load_position,
    next_first_player,
    parse_action,
    series_points,
)

from .positions import position


def test_winner_scores_five_and_loser_its_flags() -> None:
    flags = {1: "R1 R2 R3 | - | - | 0", 2: "B1 B2 B3 | - | - | 0",
             5: "- | G1 G2 G3 | - | 1", 3: "Y8 Y9 Y10 | O2"}
    state = position(flags=flags, hands=("P5", ""), phase="finish")
    state.apply(parse_action("claim 3"))
    assert state.is_over and state.winner == 0
    assert series_points(state) == (5, 1)
    assert next_first_player(state) == 0


def test_a_draw_scores_flags_and_the_other_seat_starts() -> None:
    resigned = position(options="claim=after-play first=1", player=1)
    resigned.resign(1)
    assert next_first_player(resigned) == 0
    text = dump_position(position(flags={4: "R1 R2 R3 | - | - | 0"},
                                  options="claim=after-play first=1", player=1))
    drawn = load_position(text.replace("status: playing", "status: draw")
                          .replace("phase=play", "phase=over"))
    assert drawn.is_over and drawn.winner is None
    assert series_points(drawn) == (1, 0)
    assert next_first_player(drawn) == 0


def test_points_only_for_finished_games() -> None:
    with pytest.raises(ValueError, match="not over"):
        series_points(position())
    assert Options().first_player == 0
