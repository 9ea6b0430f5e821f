"""The search runs with the cyclic garbage collector paused (it walked the odds memos
again and again) and gives it back as it found it."""

from __future__ import annotations

import gc
import math
import random

from battleline_ai.heuristic import HeuristicBot
from battleline_ai.ismcts import Leaf, SearchParams, _run
from battleline_ai.odds import seen_position_value
from battleline_rules import GameState, Phase, new_game


def _midgame_view() -> GameState:
    state, bot, rng = new_game("standard", None, 11), HeuristicBot(), random.Random(11)
    while state.ply < 24 or state.phase is not Phase.PLAY:
        state.apply(bot.choose(state.view(state.current_player), rng))
    return state.view(state.current_player)


def test_no_collection_runs_during_a_search_and_the_collector_comes_back() -> None:
    view = _midgame_view()
    roots = {a: 0.0 for a in view.legal_actions()[:6]}
    params = SearchParams(iterations=300, seconds=None, leaf=Leaf.SEEN, depth=0)
    collections: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append(info["generation"])

    # Python's own thresholds and the collector on: an engine started earlier in this
    # process (tests start them in-process) raised the thresholds for the whole process.
    thresholds = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    gc.enable()
    gc.callbacks.append(count)
    try:
        # The same kind of work with the collector on: several collections.
        rng = random.Random(1)
        for _ in range(300):
            world = view.sample_world(rng)
            world.apply_unchecked(rng.choice(world.legal_actions()))
            seen_position_value(world, view.current_player)
        assert len(collections) > 1
        for enabled in (True, False):
            (gc.enable if enabled else gc.disable)()
            collections.clear()
            stats, done = _run(view, roots, params, random.Random(1), math.inf)
            assert done == 300 and sum(v for v, _ in stats.values()) == 300
            # At most the one collection the first allocation after the search starts,
            # and it leaves the old generation (the odds memos) alone.
            assert len(collections) <= (1 if enabled else 0)
            assert 2 not in collections
            assert gc.isenabled() is enabled  # given back as it was found
    finally:
        gc.callbacks.remove(count)
        gc.set_threshold(*thresholds)
        gc.enable()
