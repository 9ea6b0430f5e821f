"""The ``charge`` knob: a troop played at one flag is priced at its best use at another."""

from __future__ import annotations

import pytest

from battleline_ai import make_bot
from battleline_ai.heuristic import Board, score_action
from battleline_ai.ismcts import IsmctsBot
from battleline_ai.prob import OddsBoard, ProbBot
from battleline_rules import Action, Kind, parse_card
from tests.rules.positions import position

# Seat 0 holds R10, the card its R8-R9 at flag 1 waits for; flags 2-9 are empty.
WEDGE_WAITING = position(
    flags={1: "R8 R9 | Y5 Y6 | - | -"}, hands=("R10 B3 Y1 G1 O1 P1 Y2", "")
).view(0)
R10 = parse_card("R10")


def play(card: int, flag: int) -> Action:
    return Action(Kind.PLAY, card=card, flag=flag)


@pytest.mark.parametrize("board_type", [Board, OddsBoard])
def test_a_card_another_flag_needs_costs_its_use_there(board_type: type[Board]) -> None:
    plain, charged = board_type(WEDGE_WAITING, 0), board_type(WEDGE_WAITING, 0, charge=0.5)
    given_up = charged.elsewhere(R10, 4)
    # Flag 1 loses its sure wedge when R10 goes to flag 5; played at flag 1, R10 gives up
    # next to nothing, since every other flag is empty.
    assert given_up > 0.05
    assert charged.elsewhere(R10, 0) < given_up / 2
    assert score_action(charged, play(R10, 4)) == pytest.approx(
        score_action(plain, play(R10, 4)) - 0.5 * given_up
    )
    # So the charge widens R10's lead of flag 1 over flag 5.
    lead_charged = score_action(charged, play(R10, 0)) - score_action(charged, play(R10, 4))
    lead_plain = score_action(plain, play(R10, 0)) - score_action(plain, play(R10, 4))
    assert lead_charged > lead_plain + 0.1


def test_a_flag_the_seat_cannot_add_to_is_not_a_use() -> None:
    """Once flag 1 is claimed, R10 has no use there to give up."""
    view = position(
        flags={1: "R8 R9 R7 | Y5 Y6 B6 | - | 0"}, hands=("R10 B3 Y1 G1 O1 P1 Y2", "")
    ).view(0)
    open_use = OddsBoard(WEDGE_WAITING, 0, charge=0.5).elsewhere(R10, 4)
    assert OddsBoard(view, 0, charge=0.5).elsewhere(R10, 4) < open_use / 2


def test_charge_is_a_knob_of_prob_and_of_the_search() -> None:
    bot, search = make_bot("prob:charge=0.3"), make_bot("ismcts:level=5,charge=0.2")
    assert isinstance(bot, ProbBot) and bot.charge == pytest.approx(0.3)
    assert isinstance(search, IsmctsBot) and isinstance(search.helper, ProbBot)
    assert search.helper.charge == pytest.approx(0.2)
    with pytest.raises(ValueError, match="charge"):
        make_bot("prob:weight=1")
