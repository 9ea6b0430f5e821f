"""The compiled rules core (setup.py) must be built from the sources beside it: an
extension module shadows its .py, so a source edited after the last install would go
untested. Installing again (`pip install -e .`) rebuilds every extension."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

import battleline_rules

PACKAGE = Path(__file__).parents[2] / "rules" / "battleline_rules"
SOURCES = sorted(PACKAGE.glob("*.py"))


@pytest.mark.parametrize("source", SOURCES, ids=[s.stem for s in SOURCES])
def test_no_extension_is_older_than_its_source(source: Path) -> None:
    for extension in PACKAGE.glob(f"{source.stem}.*.so"):
        assert extension.stat().st_mtime >= source.stat().st_mtime, (
            f"{extension.name} was built before {source.name} last changed: "
            "run `pip install -e .` again")


def test_modules_load_from_where_the_build_put_them() -> None:
    """Compiled: every module is an extension; pure (BATTLELINE_PURE_PYTHON=1 at install,
    or no compiler): every module is its source."""
    modules = [s.stem for s in SOURCES if s.stem != "__init__"]  # a package's spec: its .py
    suffixes = {name: Path(importlib.util.find_spec(f"battleline_rules.{name}").origin).suffix
                for name in modules}
    expected = ".so" if battleline_rules.is_compiled() else ".py"
    assert set(suffixes.values()) == {expected}, suffixes


@pytest.mark.skipif(os.environ.get("BATTLELINE_PURE_PYTHON") == "1",
                    reason="installed pure on purpose")
def test_ci_runs_the_compiled_core() -> None:
    """CI installs with a compiler, so the tests exercise what users run."""
    assert battleline_rules.is_compiled()


def test_states_views_and_settings_survive_pickling() -> None:
    """The AI sends views to its search processes; compiled classes pickle by value."""
    import pickle
    import random

    from battleline_rules import (
        RULESETS,
        SPECTATOR,
        ClaimTiming,
        Options,
        dump_position,
        new_game,
    )

    rng = random.Random(7)
    for name in RULESETS:
        state = new_game(name, seed=rng.getrandbits(32))
        for _ in range(rng.randrange(20, 60)):
            if state.is_over:
                break
            state.apply(rng.choice(state.legal_actions()))
        for original in (state, state.view(0), state.view(1), state.view(SPECTATOR)):
            copy = pickle.loads(pickle.dumps(original))
            assert dump_position(copy) == dump_position(original)
            assert copy.legal_actions() == original.legal_actions()
        assert pickle.loads(pickle.dumps(RULESETS[name])) == RULESETS[name]
    options = Options(ClaimTiming.START_OF_TURN, 7, 1)
    assert pickle.loads(pickle.dumps(options)) == options
