"""`prob`: a one-ply player on exact formation odds, no search.

It plays like the heuristic (claims at once, then the action that most raises
the weighted win chances of the flags), but a flag's chance is
`odds.FlagOdds`: hypergeometric odds of each formation either side can still
reach. A card played is also a card no longer in hand for the other flags,
so a play is charged what the other flags lose without it.
"""

from __future__ import annotations

from battleline_rules import Action, GameState, Kind
from battleline_rules.board import UNCLAIMED
from battleline_rules.cards import is_tactic

from .heuristic import Board, HeuristicBot, score_action
from .odds import FlagOdds


class OddsBoard(Board):
    """A decision's board whose flag chances are exact odds."""

    def __init__(self, view: GameState, seat: int) -> None:
        super().__init__(view, seat)
        self.odds = FlagOdds(view, seat)
        self._spent: dict[int, float] = {}

    def estimate(
        self, mine: list[int], theirs: list[int], size: int, fog: bool, placed: int
    ) -> float:
        return self.odds.chance(mine, theirs, size, fog, placed)

    def score(self, action: Action) -> float:
        score = score_action(self, action)
        if action.kind is Kind.PLAY and not is_tactic(action.card):
            score -= self.spent_cost(action.card, action.flag)
        return score

    def spent_cost(self, card: int, skip: int) -> float:
        """What the flags other than ``skip`` lose when ``card`` leaves the hand."""
        total = self._spent.get(card)
        if total is None:
            total = 0.0
            for i in range(len(self.view.flags)):
                total += self._loss(card, i)
            self._spent[card] = total
        return total - self._loss(card, skip)

    def _loss(self, card: int, index: int) -> float:
        flag = self.view.flags[index]
        if flag.claimed != UNCLAIMED or len(flag.cards[self.seat]) >= flag.size:
            return 0.0
        seat = self.seat
        after = self.odds.chance(
            flag.cards[seat], flag.cards[1 - seat], flag.size, flag.fog, spent=1 << card
        )
        return self.weights[index] * (self.now(index) - after)


class ProbBot(HeuristicBot):
    """The heuristic's decisions on exact odds (spec ``prob``)."""

    name = "prob"
    board_type = OddsBoard

    @classmethod
    def from_knobs(cls, knobs: dict[str, str]) -> ProbBot:
        if knobs:
            raise ValueError("prob takes no options")
        return cls()
