"""How good a flag, or a whole position, looks for one seat.

One estimate serves the heuristic bot (score an action by how it moves the
flags it touches) and ISMCTS (score a position where a rollout is cut), so
both agree on what "a good flag" is.

A side's prospect is the strongest formation it can still reach
(`best_formation` over the troops not face up), minus a penalty for every
card it still has to find: a formation that needs two unseen cards is a
hope, not a fact. Cards already in the side's own hand cost little.
"""

from __future__ import annotations

import math

from battleline_rules import GameState, best_formation
from battleline_rules.board import UNCLAIMED
from battleline_rules.cards import mask_of

# Strength points (100 per category, 1 per value point) a side loses per card still
# to find: unseen, or already in its own hand.
MISSING_PENALTY = 55
IN_HAND_PENALTY = 12
# Strength gap that makes a flag ~73% likely (logistic scale).
SCALE = 40.0
HOPELESS = -1000.0
# Extra weight of a flag next to claimed ones, and of one that would decide the game.
NEIGHBOUR_WEIGHT = 0.3
DECISIVE_WEIGHT = 1.5


def side_prospect(
    state: GameState, cards: list[int], size: int, fog: bool, available: int, hand: int
) -> float:
    """Expected strength of a side: best reachable minus the cost of the cards it lacks."""
    missing = max(0, size - len(cards))
    form = best_formation(state.ruleset, cards, missing, available, fog)
    if form is None:
        return HOPELESS
    cost = sum(IN_HAND_PENALTY if hand >> c & 1 else MISSING_PENALTY for c in form.added)
    return form.strength - cost


def flag_chance(
    state: GameState,
    seat: int,
    mine: list[int],
    theirs: list[int],
    size: int,
    fog: bool,
    hands: tuple[int, int],
    placed: int = 0,
) -> float:
    """Probability-like chance that ``seat`` wins a flag with these sides.

    ``hands`` are the masks of cards known to be in each seat's hand (on a view
    the opponent's is 0); ``placed`` masks cards the action being scored puts
    face up, which no completion may use any more.
    """
    available = state.available & ~placed
    me = side_prospect(state, mine, size, fog, available & ~hands[1 - seat], hands[seat])
    them = side_prospect(state, theirs, size, fog, available & ~hands[seat], hands[1 - seat])
    if me == HOPELESS and them == HOPELESS:
        return 0.5
    if _proven(state, mine, theirs, size, fog, available):
        return 0.98
    if _proven(state, theirs, mine, size, fog, available):
        return 0.02
    x = (me - them) / SCALE
    x = max(-30.0, min(30.0, x))
    return 1.0 / (1.0 + math.exp(-x))


def flag_weights(state: GameState, seat: int) -> list[float]:
    """How much each flag matters to ``seat``: neighbours held, and flags that decide the game."""
    flags, ruleset = state.flags, state.ruleset
    mine, theirs = state.claimed_by(seat), state.claimed_by(1 - seat)
    weights = []
    for i, flag in enumerate(flags):
        if flag.claimed != UNCLAIMED:
            weights.append(1.0)
            continue
        w = 1.0
        for j in (i - 1, i + 1):
            if 0 <= j < len(flags) and flags[j].claimed != UNCLAIMED:
                w += NEIGHBOUR_WEIGHT
        if ruleset.has_won([*mine, i]):
            w += DECISIVE_WEIGHT
        if ruleset.has_won([*theirs, i]):
            w += DECISIVE_WEIGHT
        weights.append(w)
    return weights


def hand_masks(state: GameState) -> tuple[int, int]:
    """Cards known to be in each hand (placeholders, i.e. hidden cards, count as unknown)."""
    return mask_of(state.hands[0]), mask_of(state.hands[1])


def flag_chances(state: GameState, seat: int, hands: tuple[int, int]) -> list[float]:
    """`flag_chance` of every flag as it stands (claimed flags are 1 or 0)."""
    chances = []
    for flag in state.flags:
        if flag.claimed != UNCLAIMED:
            chances.append(1.0 if flag.claimed == seat else 0.0)
        else:
            chances.append(
                flag_chance(
                    state, seat, flag.cards[seat], flag.cards[1 - seat], flag.size, flag.fog, hands
                )
            )
    return chances


def position_value(state: GameState, seat: int) -> float:
    """Chance in [0, 1] that ``seat`` wins from here: exact when over, else an estimate."""
    if state.is_over:
        return 0.5 if state.winner is None else float(state.winner == seat)
    chances = flag_chances(state, seat, hand_masks(state))
    weights = flag_weights(state, seat)
    x = sum(w * (p - 0.5) for w, p in zip(weights, chances, strict=True))
    return 1.0 / (1.0 + math.exp(-1.2 * x))


def _proven(
    state: GameState, complete: list[int], other: list[int], size: int, fog: bool, available: int
) -> bool:
    """Whether a complete side already beats every completion of an incomplete one."""
    if len(complete) < size or len(other) >= size:
        return False
    best = best_formation(state.ruleset, other, size - len(other), available, fog)
    if best is None:
        return True
    held = best_formation(state.ruleset, complete, 0, 0, fog)
    return held is not None and best.strength <= held.strength
