"""The bot interface, the random bot, and the parser for bot specs.

A spec names a bot and its knobs: ``random``, ``heuristic``,
``ismcts:level=3``, ``ismcts:iterations=2000,c=0.7``. The tournament
harness, the hosted AI worker and hints all build bots through `make_bot`.
"""

from __future__ import annotations

import random
from typing import Protocol

from battleline_rules import Action, GameState


class Bot(Protocol):
    """Anything that picks an action for the seat a view belongs to.

    ``view`` is ``state.view(seat)`` with that seat to act: a bot must decide
    from it alone (it may sample worlds from it, never see the real one).
    """

    name: str

    def choose(self, view: GameState, rng: random.Random) -> Action: ...


class RandomBot:
    """Uniform over the legal actions: the floor every other bot must clear."""

    name = "random"

    def choose(self, view: GameState, rng: random.Random) -> Action:
        return rng.choice(view.legal_actions())


def parse_spec(spec: str) -> tuple[str, dict[str, str]]:
    """Split ``kind:key=value,key=value`` into the kind and its knobs."""
    kind, _, rest = spec.strip().partition(":")
    knobs: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in rest.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"bad bot option {item!r} in {spec!r}: expected key=value")
        knobs[key.strip()] = value.strip()
    return kind.strip().lower(), knobs


# Difficulty levels: machine-independent (iteration budgets, not seconds); see
# services/ai/README.md. Knobs given with ``level=`` (e.g. ``seconds=2``) apply on top.
LEVELS: dict[int, str] = {
    1: "heuristic:noise=0.6",
    2: "heuristic:noise=0.2",
    3: "heuristic",
    4: "ismcts:iterations=200,inner_width=5",
    5: "ismcts:iterations=1000,inner_width=5,leaf=seen,depth=0,rank=prob,c=0.3,margin=0.001",
}


def make_bot(spec: str) -> Bot:
    """Build a bot from its spec; unknown kinds or knobs raise ValueError."""
    kind, knobs = parse_spec(spec)
    if "level" in knobs:
        level = knobs.pop("level")
        if kind != "ismcts" or not level.isdigit() or int(level) not in LEVELS:
            raise ValueError(f"use ismcts:level=N with N in 1..{max(LEVELS)}")
        kind, base = parse_spec(LEVELS[int(level)])
        if kind != "ismcts":
            knobs.pop("seconds", None)  # the rule-based levels answer at once anyway
        knobs = {**base, **knobs}
    if kind == "random":
        if knobs:
            raise ValueError("random takes no options")
        return RandomBot()
    if kind == "heuristic":
        from .heuristic import HeuristicBot

        return HeuristicBot.from_knobs(knobs)
    if kind == "prob":
        from .prob import ProbBot

        return ProbBot.from_knobs(knobs)
    if kind == "targets":
        if knobs:
            raise ValueError("targets takes no options")
        from .targets import TargetsBot

        return TargetsBot()
    if kind == "ismcts":
        from .ismcts import IsmctsBot

        return IsmctsBot.from_knobs(knobs)
    raise ValueError(
        f"unknown bot {kind!r}: use random, heuristic, prob, targets or ismcts[:knobs]"
    )
