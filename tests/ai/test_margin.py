"""The root margin: only the plays the ranking scores within ``margin`` of its best are
searched, and a play it prefers by more is made without a search."""

from __future__ import annotations

import random

from battleline_ai.decide import decide
from battleline_ai.heuristic import HeuristicBot, ranked_plays
from battleline_ai.ismcts import IsmctsBot
from battleline_ai.prob import OddsBoard
from battleline_rules import GameState, Phase, dump_position, new_game

SPEC = {"iterations": "40", "leaf": "seen", "depth": "0", "rank": "prob", "margin": "0.001"}


def play_positions(count: int) -> list[GameState]:
    """Views of the PLAY step with a choice, from heuristic games."""
    helper, rng = HeuristicBot(), random.Random(4)
    views: list[GameState] = []
    for seed in range(20):
        state = new_game("standard", None, 300 + seed)
        while not state.is_over and len(views) < count:
            seat = state.current_player
            view = state.view(seat)
            if state.phase is Phase.PLAY and len(state.legal_actions()) > 1:
                views.append(view)
            state.apply(helper.choose(view, rng))
    return views


def test_only_plays_within_the_margin_are_searched() -> None:
    bot = IsmctsBot.from_knobs(SPEC)
    alone = searched = 0
    for view in play_positions(40):
        ranked = ranked_plays(OddsBoard(view, view.current_player), view.legal_actions())
        near = {a for score, a in ranked if score >= ranked[0][0] - 0.001}
        result = bot.search(view, random.Random(1))
        assert result.action in near
        if len(near) == 1:
            alone += 1
            assert result.iterations == 0 and not result.stats
            assert 0.0 < result.value < 1.0  # the leaf's value of the position after it
        else:
            searched += 1
            assert result.iterations == 40 and set(result.stats) <= near
    assert alone and searched  # both cases came up


def test_without_a_margin_every_candidate_is_searched() -> None:
    bot = IsmctsBot.from_knobs({**SPEC, "margin": "none"})
    view = play_positions(40)[-1]
    result = bot.search(view, random.Random(1))
    assert result.iterations == 40 and len(result.stats) > 1


def test_a_hint_without_a_search_still_names_its_move_and_estimate() -> None:
    """What the Suggest RPC returns: an unsearched move is its own top action, 0 visits."""
    kinds = set()
    for view in play_positions(12):
        decision = decide(dump_position(view), "ismcts:level=5,iterations=40", None, 1)
        assert decision.action in [action for action, _, _ in decision.top]
        if decision.iterations == 0:
            assert decision.top == [(decision.action, 0, decision.value)]
        else:
            assert sum(visits for _, visits, _ in decision.top) == decision.iterations
        kinds.add(decision.iterations == 0)
    assert kinds == {True, False}
