"""Default policies for ISMCTS rollouts: cheap, so that a search runs many of them.

`greedy` plays like a hasty human: claims at once, draws troops, and places
the troop that best fits a flag (same colour, consecutive, same value) with
some noise; tactics only now and then. `random` is uniform but still claims
at once (a rollout that forgets to claim measures nothing).
"""

from __future__ import annotations

import random
from collections.abc import Callable

from battleline_rules import TROOP_DECK, Action, GameState, Kind, Phase
from battleline_rules.cards import COLOUR, VALUE, is_tactic

Policy = Callable[[GameState, random.Random], Action]

TACTIC_RATE = 0.08
TROOP_DRAW_RATE = 0.85


def random_policy(world: GameState, rng: random.Random) -> Action:
    actions = world.legal_actions()
    first = actions[0]
    if first.kind is Kind.CLAIM or len(actions) == 1:
        return first
    return rng.choice(actions)


def _fit(cards: list[int], card: int, size: int) -> float:
    """How well ``card`` joins ``cards`` (troops; tactics ignored): 0 host .. 4 wedge-like."""
    troops = [c for c in cards if not is_tactic(c)]
    if not troops:
        return 1.0 + VALUE[card] * 0.05 if not cards else 2.5
    colour, value = COLOUR[card], VALUE[card]
    values = [VALUE[c] for c in troops]
    flush = all(COLOUR[c] == colour for c in troops)
    kind = all(v == value for v in values)
    lo, hi = min(*values, value), max(*values, value)
    run = value not in values and len(set(values)) == len(values) and hi - lo < size
    rank = 4.0 if flush and run else 3.0 if kind else 2.0 if flush else 1.0 if run else 0.0
    return rank + value * 0.05


def greedy_policy(world: GameState, rng: random.Random) -> Action:
    actions = world.legal_actions()
    first = actions[0]
    if first.kind is Kind.CLAIM or len(actions) == 1:
        return first
    phase = world.phase
    if phase is Phase.FINISH:
        draws = [a for a in actions if a.kind is Kind.DRAW]
        if len(draws) == 2:
            return draws[0 if draws[0].deck == TROOP_DECK else 1] if rng.random() < (
                TROOP_DRAW_RATE
            ) else draws[1 if draws[0].deck == TROOP_DECK else 0]
        return first
    if phase is not Phase.PLAY or rng.random() < TACTIC_RATE:
        return rng.choice(actions)
    seat, flags = world.player, world.flags
    best, best_score = None, -1.0
    for action in actions:
        if action.kind is not Kind.PLAY or is_tactic(action.card) or action.flag < 0:
            continue
        flag = flags[action.flag]
        score = _fit(flag.cards[seat], action.card, flag.size) + rng.random()
        if score > best_score:
            best, best_score = action, score
    return best if best is not None else rng.choice(actions)


POLICIES: dict[str, Policy] = {"random": random_policy, "greedy": greedy_policy}
