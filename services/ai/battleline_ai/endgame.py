"""An exact endgame: once no card is hidden but the opponent's hand, search to the end.

When both decks are empty (and no card was set aside unseen), every card the
seat cannot see is in the opponent's hand: the seat knows the whole position,
and a small enough one can be solved by alpha-beta to the end of the game.
`solve` plays a proven win and otherwise says nothing: against perfect play a
proven loss is lost whatever one does, and the search's usual choice keeps
the most chances against an opponent that errs.
"""

from __future__ import annotations

import random

from battleline_rules import Action, GameState, Kind
from battleline_rules.cards import UNKNOWN_TACTIC, UNKNOWN_TROOP

# Positions with more cards in both hands than this (a Scout draw holds 9) are left to the search.
MAX_HAND_CARDS = 16
# Tree nodes one solve may visit (about 30 us each) before it gives up: 0.3 s at most.
NODE_BUDGET = 10_000


class _OutOfBudget(Exception):
    pass


def known_world(view: GameState) -> GameState | None:
    """The one full state consistent with ``view``, when nothing is hidden but a hand."""
    hidden = (UNKNOWN_TROOP, UNKNOWN_TACTIC)
    if any(c in hidden for cards in (*view.decks, view.removed) for c in cards):
        return None
    return view.sample_world(random.Random(0))  # only the hand's order is drawn


def solve(view: GameState, budget: int = NODE_BUDGET) -> Action | None:
    """A move that wins by force from ``view`` (the seat to act), if one is proven."""
    if view.is_over or sum(len(h) for h in view.hands) > MAX_HAND_CARDS:
        return None
    world = known_world(view)
    if world is None:
        return None
    seat = world.current_player
    solver = _Solver(seat, budget)
    try:
        for action in moves(world):
            child = world.clone()
            child.apply_unchecked(action)
            if solver.value(child, 0.5, 1.0) >= 1.0:
                return action
    except _OutOfBudget:
        return None
    return None


def moves(state: GameState) -> list[Action]:
    """Legal actions, claims alone when there are any (claiming a proven flag never hurts)."""
    actions = state.legal_actions()
    claims = [a for a in actions if a.kind is Kind.CLAIM]
    return claims[:1] if claims else actions


class _Solver:
    """Alpha-beta over full states; values are the root seat's: 1 win, 0.5 draw, 0 loss."""

    def __init__(self, seat: int, budget: int) -> None:
        self.seat = seat
        self.budget = budget

    def value(self, state: GameState, alpha: float, beta: float) -> float:
        self.budget -= 1
        if self.budget < 0:
            raise _OutOfBudget
        if state.is_over:
            return 0.5 if state.winner is None else float(state.winner == self.seat)
        maximising = state.current_player == self.seat
        best = 0.0 if maximising else 1.0
        for action in moves(state):
            child = state.clone()
            child.apply_unchecked(action)
            v = self.value(child, alpha, beta)
            if maximising:
                best = max(best, v)
                alpha = max(alpha, v)
            else:
                best = min(best, v)
                beta = min(beta, v)
            if alpha >= beta:
                break
        return best
