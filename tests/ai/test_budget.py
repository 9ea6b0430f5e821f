"""ISMCTS with a wall-time budget answers in time: never more than 10% over, over many moves."""

from __future__ import annotations

import random
import time

import pytest

from battleline_ai.heuristic import HeuristicBot
from battleline_ai.ismcts import IsmctsBot, SearchParams
from battleline_rules import Phase, new_game

BUDGET = 0.4


@pytest.mark.parametrize("workers", [1, 2])
def test_time_budget_is_kept(workers: int) -> None:
    bot = IsmctsBot(SearchParams(iterations=None, seconds=BUDGET, workers=workers))
    helper, rng = HeuristicBot(), random.Random(4)
    state = new_game("standard", None, 21)
    times, iterations = [], []
    try:
        while not state.is_over and len(times) < 6:
            seat = state.current_player
            view = state.view(seat)
            if state.phase is Phase.PLAY and len(state.legal_actions()) > 1:
                start = time.perf_counter()
                result = bot.search(view, rng)
                times.append(time.perf_counter() - start)
                iterations.append(result.iterations)
                state.apply(result.action)
            else:
                state.apply(helper.choose(view, rng))
    finally:
        bot.close()
    assert len(times) == 6
    assert max(times) <= BUDGET * 1.10, times
    assert min(iterations) > 10  # the budget was used for search, not lost
