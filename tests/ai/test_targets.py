"""`targets`: legal in every ruleset and phase, blind to hidden cards, and its own rules."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from battleline_ai import make_bot
from battleline_ai.prob import ProbBot
from battleline_ai.targets import TargetsBoard, TargetsBot, choose_deck, priority_weights
from battleline_rules import (
    RULESETS,
    TACTIC_DECK,
    TROOP_DECK,
    Action,
    GameState,
    Kind,
    new_game,
    parse_card,
)
from tests.rules.positions import position


def random_positions(ruleset: str, count: int, seed: int) -> Iterator[GameState]:
    """Full states after a random number of random plies (any phase, seat to act)."""
    rng = random.Random(seed)
    found = 0
    game = 0
    while found < count:
        state = new_game(ruleset, None, seed * 1000 + game)
        game += 1
        for _ in range(rng.randrange(0, 140)):
            if state.is_over:
                break
            state.apply(state.random_action(rng))
        if not state.is_over:
            found += 1
            yield state


@pytest.mark.parametrize("ruleset", sorted(RULESETS))
def test_targets_chooses_a_legal_action_in_random_positions(ruleset: str) -> None:
    bot, rng = TargetsBot(), random.Random(1)
    phases = set()
    for state in random_positions(ruleset, 150, seed=len(ruleset)):
        seat = state.current_player
        action = bot.choose(state.view(seat), rng)
        assert action in state.legal_actions(), (action, state.phase)
        phases.add(state.phase.name)
    assert {"PLAY", "FINISH"} <= phases


@pytest.mark.parametrize("ruleset", sorted(RULESETS))
def test_targets_plays_complete_legal_games(ruleset: str) -> None:
    bots = (TargetsBot(), make_bot("prob"))
    for game in range(2):
        state = new_game(ruleset, None, 3000 + game)
        rngs = [random.Random(game), random.Random(game + 7)]
        while not state.is_over:
            seat = state.current_player
            mover = bots[(seat + game) % 2]
            action = mover.choose(state.view(seat), rngs[seat])
            assert action in state.legal_actions(), (action, state.phase)
            state.apply(action)


def test_make_bot_builds_targets_and_refuses_knobs() -> None:
    bot = make_bot("targets")
    assert isinstance(bot, TargetsBot) and bot.name == "targets"
    with pytest.raises(ValueError):
        make_bot("targets:charge=1")


@pytest.mark.parametrize("ruleset", sorted(RULESETS))
def test_targets_decides_from_the_view_alone(ruleset: str) -> None:
    """Two full states that look the same to the seat to act get the same choice."""
    bot = TargetsBot()
    compared = differ = 0
    for state in random_positions(ruleset, 60, seed=50 + len(ruleset)):
        seat = state.current_player
        view = state.view(seat)
        twin = view.sample_world(random.Random(compared))  # other hidden cards, same view
        assert twin.view(seat).legal_actions() == view.legal_actions()
        differ += twin.hands[1 - seat] != state.hands[1 - seat]
        mine = bot.choose(view, random.Random(9))
        theirs = bot.choose(twin.view(seat), random.Random(9))
        assert mine == theirs
        compared += 1
    assert compared == 60 and differ > 30


def test_centre_flags_and_neighbours_of_decided_flags_come_first() -> None:
    empty = new_game("standard", None, 1).view(0)
    weights = priority_weights(empty, 0)
    assert weights[4] > weights[1] > weights[0]
    assert weights[0] == weights[8] and weights[2] == weights[6]
    claimed = position(flags={4: "R1 R2 R3 | B5 B6 B7 | - | 1"})
    near = priority_weights(claimed.view(0), 0)
    # Flags 3 and 5 (indexes 2, 4) touch the lost flag 4, flags 2 and 6 are two away.
    assert near[2] > near[1] > weights[1] and near[4] > near[5]


def test_a_spare_card_goes_to_the_lost_flag_before_a_sure_wedge_is_finished() -> None:
    """Flag 1 is lost (a red 8-9-10 against a lone B1): the bot dumps the card no other
    flag wants there first; `prob` simply finishes the green wedge on flag 2."""
    state = position(
        flags={1: "B1 | R8 R9 R10 | - | -", 2: "G8 G9 | - | - | -"},
        hands=("G10 P1 O2 Y6 Y3 B4 O9", "R1 R2 R3 R4 R5 R6 R7"),
    )
    view = state.view(0)
    board = TargetsBoard(view, 0)
    assert board.lost(0) and not board.lost(1)
    action = TargetsBot().choose(view, random.Random(0))
    assert action.kind is Kind.PLAY and action.flag == 0
    assert action.card != parse_card("G10")
    assert ProbBot().choose(view, random.Random(0)) == Action(
        Kind.PLAY, card=parse_card("G10"), flag=1
    )


def test_a_tactic_is_drawn_only_when_the_hand_has_none_and_the_game_is_close() -> None:
    draws = [Action(Kind.DRAW, deck=TROOP_DECK), Action(Kind.DRAW, deck=TACTIC_DECK)]
    # The opponent holds flags 1 and 2: flag 3 would give it three in a row.
    close = position(
        flags={1: "- | R1 R2 R3 | - | 1", 2: "- | B1 B2 B3 | - | 1"},
        hands=("G2 G5 Y7 P8 O9 B9", "R9"),
        phase="finish",
    )
    assert choose_deck(close.view(0), draws).deck == TACTIC_DECK
    holding = position(
        flags={1: "- | R1 R2 R3 | - | 1", 2: "- | B1 B2 B3 | - | 1"},
        hands=("G2 G5 Y7 P8 O9 FOG", "R9"),
        phase="finish",
    )
    assert choose_deck(holding.view(0), draws).deck == TROOP_DECK
    quiet = position(hands=("G2 G5 Y7 P8 O9 B9", "R9"), phase="finish")
    assert choose_deck(quiet.view(0), draws).deck == TROOP_DECK
