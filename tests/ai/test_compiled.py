"""The AI's compiled modules (setup.py's second mypyc group): built from the sources
beside them, and giving exactly what their plain-Python twins give."""

from __future__ import annotations

import importlib.util
import os
import random
from pathlib import Path

import pytest

import battleline_rules
from battleline_ai import evaluation, native, odds, rollout
from battleline_ai.heuristic import HeuristicBot
from battleline_rules import GameState, new_game

SOURCES = [native.PACKAGE / f"{name}.py" for name in native.COMPILED]


@pytest.mark.parametrize("source", SOURCES, ids=[s.stem for s in SOURCES])
def test_no_extension_is_older_than_its_source(source: Path) -> None:
    for extension in source.parent.glob(f"{source.stem}.*.so"):
        assert extension.stat().st_mtime >= source.stat().st_mtime, (
            f"{extension.name} was built before {source.name} last changed: "
            "run `pip install -e .` again")


def test_modules_load_from_where_the_build_put_them() -> None:
    """Compiled with the rules core, pure with it (BATTLELINE_PURE_PYTHON=1 at install)."""
    suffixes = {name: Path(importlib.util.find_spec(f"battleline_ai.{name}").origin).suffix
                for name in native.COMPILED}
    expected = ".so" if battleline_rules.is_compiled() else ".py"
    assert set(suffixes.values()) == {expected}, suffixes
    assert native.is_compiled() == battleline_rules.is_compiled()


@pytest.mark.skipif(os.environ.get("BATTLELINE_PURE_PYTHON") == "1",
                    reason="installed pure on purpose")
def test_ci_runs_the_compiled_odds() -> None:
    assert native.is_compiled()


def test_the_pure_twins_are_plain_python() -> None:
    pure = native.pure_modules()
    for name, module in pure.items():
        assert module.__file__ is not None and module.__file__.endswith(f"{name}.py")
    assert pure["odds"].fit is pure["rollout"].fit  # each twin imports the other twins
    assert odds.fit is rollout.fit  # and the installed modules are left as they were


def _positions(count: int) -> list[GameState]:
    """Views of seeded heuristic games at every stage, Mud and Fog included."""
    bot, views = HeuristicBot(), []
    for seed in range(count):
        state, rng = new_game("standard", None, 500 + seed), random.Random(seed)
        stop = rng.randrange(8, 90)
        while not state.is_over and state.ply < stop:
            state.apply(bot.choose(state.view(state.current_player), rng))
        if not state.is_over:
            views.append(state.view(state.current_player))
    return views


def test_compiled_and_pure_odds_agree_on_random_positions() -> None:
    """Leaf values, every flag's odds and the greedy rollout's choices are the same
    numbers (the search must not change with the install)."""
    pure = native.pure_modules()
    compared = 0
    for view in _positions(40):
        seat = view.current_player
        world = view.sample_world(random.Random(view.ply))
        for state in (view, world):
            for me in (0, 1):
                assert pure["odds"].seen_position_value(state, me) == odds.seen_position_value(
                    state, me)
                assert pure["odds"].position_value(state, me) == odds.position_value(state, me)
                assert pure["evaluation"].position_value(state, me) == (
                    evaluation.position_value(state, me))
        mine, theirs = odds.FlagOdds(view, seat), pure["odds"].FlagOdds(view, seat)
        for i, flag in enumerate(view.flags):
            args = (flag.cards[seat], flag.cards[1 - seat], flag.size, flag.fog)
            assert mine.chance(*args) == theirs.chance(*args)
            assert mine.chance(*args, 0, i) == theirs.chance(*args, 0, i)
            compared += 1
        for seed in range(3):
            assert rollout.greedy_policy(world.clone(), random.Random(seed)) == pure[
                "rollout"].greedy_policy(world.clone(), random.Random(seed))
        assert rollout.likely_plays(world, 5) == pure["rollout"].likely_plays(world, 5)
    print(f"compiled and pure odds compared on {compared} flags")
    assert compared > 150
