"""Default policies for ISMCTS rollouts: cheap, so that a search runs many of them.

`greedy` plays like a hasty human: claims at once, draws troops, and places
the troop that best fits a flag (same colour, consecutive, same value) with
some noise; tactics only now and then. `random` is uniform but still claims
at once (a rollout that forgets to claim measures nothing).
"""

from __future__ import annotations

import random
from collections.abc import Callable

from battleline_rules import Action, GameState, Kind, Phase
from battleline_rules.cards import COLOUR, TACTIC_CARDS, VALUE, is_tactic
from battleline_rules.state import PLAYS

Policy = Callable[[GameState, random.Random], Action]

Shape = tuple[int, int, float, int, int, int, int, int]
TACTIC_RATE = 0.08
TROOP_DRAW_RATE = 0.85


def random_policy(world: GameState, rng: random.Random) -> Action:
    actions = world.legal_actions()
    first = actions[0]
    if first.kind is Kind.CLAIM or len(actions) == 1:
        return first
    return rng.choice(actions)


def flag_shapes(world: GameState, seat: int) -> list[Shape]:
    """Per open flag: (index, size, base, colour or -1, kind value or -1, low, high, values held).

    A base score >= 0 marks a flag without troops there (any card fits equally).
    """
    shapes = []
    memo = _SHAPES
    for i, flag in enumerate(world.flags):
        if flag.claimed >= 0:
            continue
        key = (*flag.cards[seat], -flag.size)
        shape = memo.get(key)
        if shape is None:
            if len(memo) > 200_000:
                memo.clear()
            shape = memo[key] = _shape(flag.cards[seat], flag.size)
        if shape:
            shapes.append((i, *shape))
    return shapes


# A side's shape depends only on its cards and the flag's size: memoised across searches.
_SHAPES: dict[tuple[int, ...], tuple[int, float, int, int, int, int, int] | tuple[()]] = {}


def _shape(cards: list[int], size: int) -> tuple[int, float, int, int, int, int, int] | tuple[()]:
    if len(cards) >= size:
        return ()
    troops = [c for c in cards if not is_tactic(c)]
    if not troops:
        return (size, 2.5 if cards else 1.0, -1, -1, 0, 0, 0)
    values = [VALUE[c] for c in troops]
    colour = COLOUR[troops[0]]
    if any(COLOUR[c] != colour for c in troops):
        colour = -1
    kind = values[0] if all(v == values[0] for v in values) else -1
    # A run needs distinct values: a side with a pair can never be one (low > high).
    distinct = len(set(values)) == len(values)
    low, high = (min(values), max(values)) if distinct else (99, 0)
    held = sum(1 << v for v in values)
    return (size, -1.0, colour, kind, low, high, held)


def fit(shape: Shape, card: int) -> float:
    """How well ``card`` joins a flag's troops: 0 host .. 4 wedge-like, plus a little value."""
    _, size, base, colour, kind, low, high, held = shape
    value = VALUE[card]
    if base >= 0:
        return base + value * 0.05
    flush = colour == COLOUR[card]
    run = low <= high and max(high, value) - min(low, value) < size and not held >> value & 1
    if flush and run:
        return 4.0 + value * 0.05
    if kind == value:
        return 3.0 + value * 0.05
    return (2.0 if flush else 1.0 if run else 0.0) + value * 0.05


def greedy_policy(world: GameState, rng: random.Random) -> Action:
    actions = world.legal_actions()
    first = actions[0]
    if first.kind is Kind.CLAIM or len(actions) == 1:
        return first
    phase = world.phase
    if phase is Phase.FINISH:
        draws = [a for a in actions if a.kind is Kind.DRAW]
        if len(draws) == 2:
            # legal_actions lists the troop deck first
            return draws[0] if rng.random() < TROOP_DRAW_RATE else draws[1]
        return first
    if phase is not Phase.PLAY or rng.random() < TACTIC_RATE:
        return rng.choice(actions)
    seat = world.player
    troops = [c for c in world.hands[seat] if c not in TACTIC_CARDS]
    shapes = flag_shapes(world, seat)
    if not troops or not shapes:
        return rng.choice(actions)
    # `fit` inlined (same scores, same order of random draws): this loop is the
    # hottest code of a search.
    cards = [(c, VALUE[c], COLOUR[c], VALUE[c] * 0.05) for c in troops]
    best, best_score, rand = (troops[0], shapes[0][0]), -1.0, rng.random
    for i, size, base, colour, kind, low, high, held in shapes:
        if base >= 0:
            for card, _, _, bonus in cards:
                score = base + bonus + rand()
                if score > best_score:
                    best, best_score = (card, i), score
            continue
        span = low <= high
        for card, value, col, bonus in cards:
            flush = colour == col
            run = (
                span
                and (high if high > value else value) - (low if low < value else value) < size
                and not held >> value & 1
            )
            if flush and run:
                score = 4.0
            elif kind == value:
                score = 3.0
            else:
                score = 2.0 if flush else 1.0 if run else 0.0
            score += bonus + rand()
            if score > best_score:
                best, best_score = (card, i), score
    return PLAYS[best[0]][best[1]]


def likely_plays(world: GameState, k: int) -> list[Action]:
    """The ``k`` troop plays that fit best (no noise): plausible moves for inner tree nodes.

    Falls back to every legal action when no troop can be placed.
    """
    seat = world.player
    troops = [c for c in dict.fromkeys(world.hands[seat]) if not is_tactic(c)]
    shapes = flag_shapes(world, seat)
    if not troops or not shapes:
        return world.legal_actions()
    scored = sorted(
        ((fit(shape, card), card, shape[0]) for shape in shapes for card in troops),
        reverse=True,
    )
    return [PLAYS[card][flag] for _, card, flag in scored[:k]]


POLICIES: dict[str, Policy] = {"random": random_policy, "greedy": greedy_policy}
