"""Perft: the number of legal action sequences from fixed positions, pinned.

python-chess pins move generation by counting whole trees of moves; a legal
action lost or added anywhere in these trees changes a count, where property
tests that only check what they happen to meet let it through. The positions
are new games and positions reached by a seeded walk (which prefers the
tactics deck, so guile tactics, Scout and Mud come up); the walk sorts the
legal actions before choosing, so it does not depend on their order.
Together the trees hold every kind of action (checked below).

To re-pin after an intended rules change: `python -m tests.rules.test_perft`
prints the counts in the table"s format, with the position of each.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest

from battleline_rules import TACTIC_DECK, ClaimTiming, GameState, Kind, Options, new_game

START_OF_TURN = Options(claim_timing=ClaimTiming.START_OF_TURN)
OPTIONS = {"after-play": None, "start-of-turn": START_OF_TURN}

# (ruleset, claim timing, seed, plies walked, depth): leaf count.
PINNED: dict[tuple[str, str, int, int, int], int] = {
    ("standard", "after-play", 1, 0, 5): 936684,
    ("standard", "after-play", 1, 10, 4): 10376,
    ("standard", "after-play", 1, 20, 4): 5940,
    ("standard", "after-play", 1, 40, 4): 2645,
    ("standard", "after-play", 1, 60, 4): 72,
    ("standard", "after-play", 1, 120, 4): 980,
    ("standard", "after-play", 1, 130, 4): 62,
    ("standard", "after-play", 2, 20, 4): 3135,
    ("standard", "after-play", 13, 100, 4): 1081,
    ("standard", "start-of-turn", 1, 20, 4): 5940,
    ("standard", "start-of-turn", 1, 70, 4): 3143,
    ("standard", "start-of-turn", 1, 120, 4): 112,
    ("basic", "after-play", 1, 0, 5): 157464,
    ("basic", "after-play", 1, 20, 4): 3012,
    ("basic", "after-play", 1, 100, 4): 741,
    ("basic", "after-play", 1, 110, 4): 32,
    ("deck52", "after-play", 1, 0, 5): 110592,
    ("deck52", "after-play", 1, 20, 4): 2556,
    ("deck52", "after-play", 1, 70, 4): 720,
}


def walk(ruleset: str, timing: str, seed: int, plies: int) -> GameState:
    """The game of `seed` after `plies` seeded choices (a tactics draw whenever one is
    legal, else uniformly among the sorted legal actions)."""
    state = new_game(ruleset, OPTIONS[timing], seed)
    rng = random.Random(seed)
    for _ in range(plies):
        actions = sorted(state.legal_actions())
        tactics = [a for a in actions if a.kind is Kind.DRAW and a.deck == TACTIC_DECK]
        state.apply(tactics[0] if tactics else rng.choice(actions))
    return state


def perft(state: GameState, depth: int, kinds: Counter[Kind]) -> int:
    """Leaves of the tree of legal actions `depth` deep (a finished game is a leaf),
    counting in `kinds` every action listed on the way."""
    actions = state.legal_actions()
    kinds.update(a.kind for a in actions)
    if depth == 1:
        return len(actions)
    total = 0
    for action in actions:
        child = state.clone()
        child.apply(action)
        total += 1 if child.is_over else perft(child, depth - 1, kinds)
    return total


@pytest.mark.parametrize(("ruleset", "timing", "seed", "plies", "depth"), list(PINNED))
def test_perft(ruleset: str, timing: str, seed: int, plies: int, depth: int) -> None:
    state = walk(ruleset, timing, seed, plies)
    assert not state.is_over
    assert perft(state, depth, Counter()) == PINNED[ruleset, timing, seed, plies, depth], state


def test_the_trees_hold_every_kind_of_action() -> None:
    """The pinned counts cover every kind of action, guile tactics and Mud included."""
    kinds: Counter[Kind] = Counter()
    for ruleset, timing, seed, plies, depth in PINNED:
        if plies:  # the walked positions hold them all; new games add only plays and draws
            perft(walk(ruleset, timing, seed, plies), depth, kinds)
    assert set(kinds) == set(Kind), set(Kind) - set(kinds)


if __name__ == "__main__":
    for key in PINNED:
        ruleset, timing, seed, plies, depth = key
        counted = perft(walk(ruleset, timing, seed, plies), depth, Counter())
        print(f'    ("{ruleset}", "{timing}", {seed}, {plies}, {depth}): {counted},')
