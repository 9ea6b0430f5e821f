"""The search runs with the cyclic garbage collector paused (it walked the odds memos
again and again), freezes what it leaves alive instead of collecting it, and gives the
collector back as it found it."""

from __future__ import annotations

import gc
import math
import random

import pytest

from battleline_ai import ismcts
from battleline_ai.heuristic import HeuristicBot
from battleline_ai.ismcts import Leaf, SearchParams, _run
from battleline_ai.odds import seen_position_value
from battleline_rules import Action, GameState, Phase, new_game


def _midgame_view() -> GameState:
    state, bot, rng = new_game("standard", None, 11), HeuristicBot(), random.Random(11)
    while state.ply < 24 or state.phase is not Phase.PLAY:
        state.apply(bot.choose(state.view(state.current_player), rng))
    return state.view(state.current_player)


def _search_inputs(iterations: int) -> tuple[GameState, dict[Action, float], SearchParams]:
    """A midgame view, six root plays and a level-5-like search of ``iterations``."""
    view = _midgame_view()
    roots = {a: 0.0 for a in view.legal_actions()[:6]}
    return view, roots, SearchParams(iterations=iterations, seconds=None, leaf=Leaf.SEEN, depth=0)


def test_no_collection_runs_during_a_search_and_the_collector_comes_back() -> None:
    view, roots, params = _search_inputs(300)
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
        # The same kind of work with the collector on, its worlds kept alive as a search
        # keeps its tree: several collections, however warm an earlier test in this
        # process left the memos (on warm memos the values alone allocate too little).
        rng, kept = random.Random(1), []
        for _ in range(300):
            world = view.sample_world(rng)
            world.apply_unchecked(rng.choice(world.legal_actions()))
            seen_position_value(world, view.current_player)
            kept.append(world)
        assert len(collections) > 1
        for enabled in (True, False):
            (gc.enable if enabled else gc.disable)()
            collections.clear()
            stats, done = _run(view, roots, params, random.Random(1), math.inf)
            assert done == 300 and sum(v for v, _ in stats.values()) == 300
            # No collection after it either: what it left alive (new memo entries) is frozen.
            assert collections == []
            assert (gc.get_freeze_count() > 0) is enabled
            assert gc.isenabled() is enabled  # given back as it was found
            gc.unfreeze()
    finally:
        gc.callbacks.remove(count)
        gc.set_threshold(*thresholds)
        gc.enable()


def test_a_search_leaves_no_cyclic_garbage() -> None:
    """Frozen garbage is never collected (until the periodic full collection), so the
    search must make none: its tree is freed by reference counting alone."""
    view, roots, params = _search_inputs(300)
    gc.disable()
    try:
        gc.collect()
        _, done = _run(view, roots, params, random.Random(2), math.inf)
        assert done == 300
        assert gc.collect() == 0
    finally:
        gc.enable()


def test_frozen_objects_are_collected_every_so_many_searches(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    view, roots, params = _search_inputs(20)
    monkeypatch.setattr(ismcts, "SEARCHES_PER_FULL_COLLECTION", 2)
    monkeypatch.setattr(ismcts, "_searches", 0)
    full: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and info["generation"] == 2:
            full.append(1)

    gc.enable()
    gc.callbacks.append(count)
    try:
        _run(view, roots, params, random.Random(1), math.inf)
        assert full == []
        _run(view, roots, params, random.Random(1), math.inf)
        assert full == [1]
    finally:
        gc.callbacks.remove(count)
        gc.unfreeze()
