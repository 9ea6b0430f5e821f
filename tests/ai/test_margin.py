"""The root margin: only the plays the ranking scores within ``margin`` of its best are
searched, and a play it prefers by more is made without a search."""

from __future__ import annotations

import random

import pytest

from battleline_ai import ismcts
from battleline_ai.decide import concealing, decide, level_spec
from battleline_ai.heuristic import HeuristicBot, ranked_plays
from battleline_ai.ismcts import IsmctsBot
from battleline_ai.prob import OddsBoard
from battleline_ai.worker import evened
from battleline_rules import GameState, Kind, Phase, dump_position, new_game

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


def test_conceal_spends_the_budget_on_a_move_it_makes_unsearched(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Twenty-sixth audit: a player's hint, run beside the hosted AI's thinking, took
    twice as long when the AI searched as when it played a clear best unsearched, one bit
    of its hand a move. With `conceal` every such decision runs a search too (its result
    unused; four fifths of the budget, as a clear best's positions cost more an iteration):
    the same moves, and a search behind each."""
    spent: list[int] = []
    real_run = ismcts._run

    def counting(*args: object, **kwargs: object) -> tuple[object, int]:
        stats, done = real_run(*args, **kwargs)  # type: ignore[arg-type]
        spent.append(done)
        return stats, done

    monkeypatch.setattr(ismcts, "_run", counting)
    plain, concealed = IsmctsBot.from_knobs(SPEC), IsmctsBot.from_knobs({**SPEC, "conceal": "1"})
    kinds = set()
    for view in play_positions(24):
        spent.clear()
        alone = plain.search(view, random.Random(1))
        assert spent == ([] if alone.iterations == 0 else [40])
        spent.clear()
        result = concealed.search(view, random.Random(1))
        if alone.iterations == 0:  # the clear best: still played, with its estimate
            assert spent == [32], "a search behind the unsearched move too"
            assert (result.action, result.iterations, result.value) == (
                alone.action, 0, alone.value)
        else:
            assert spent == [40]
            assert (result.action, result.value, result.stats) == (
                alone.action, alone.value, alone.stats)
        kinds.add(alone.iterations == 0)
    assert kinds == {True, False}


def test_only_the_searching_levels_are_concealed() -> None:
    assert concealing("ismcts:level=5") == "ismcts:level=5,conceal=1"
    assert concealing("ismcts:level=4") == "ismcts:level=4,conceal=1"
    assert concealing("ismcts:level=3") == "ismcts:level=3"  # the heuristic: never searches
    view = play_positions(1)[0]
    assert decide(dump_position(view), concealing("ismcts:level=2"), None, 1).iterations == 0


def test_the_hosted_ai_conceals_its_plays_and_nothing_else() -> None:
    """The worker's own plays are decided concealed and answered at the think time;
    with no think time, or for a draw or a claim, the level plays as it is."""
    spec = level_spec(5)
    view = play_positions(1)[0]
    play = dump_position(view)
    assert evened(spec, play, 100.0, 10.0, 1.0) == (concealing(spec), 11.0, True)
    assert evened(spec, play, 10.5, 10.0, 1.0) == (concealing(spec), 10.5, True)  # its clock
    assert evened(spec, play, 100.0, 10.0, 0.0) == (spec, 100.0, False)
    state = new_game("standard", None, 5)
    state.apply(next(a for a in state.legal_actions() if a.kind is Kind.PLAY))
    draw = dump_position(state.view(state.current_player))  # the same turn's draw
    assert evened(spec, draw, 100.0, 10.0, 1.0) == (spec, 100.0, False)
