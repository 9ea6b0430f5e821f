"""`prob`: a one-ply player on exact formation odds, no search.

It plays like the heuristic (claims at once, then the action that most raises
the weighted win chances of the flags), but a flag's chance is
`odds.FlagOdds`: hypergeometric odds of each formation either side can still
reach. With ``charge=`` (`heuristic.Board`) a troop's play is also priced at a
share of the most another flag loses once the card leaves the hand: charging
all the other flags' losses made it weaker (38.5% head to head over 200
games, seed 9100); a share of the single largest makes it stronger (see
services/ai/README.md).
"""

from __future__ import annotations

import random

from battleline_rules import Action, GameState

from .heuristic import Board, HeuristicBot
from .odds import FlagOdds


class OddsBoard(Board):
    """A decision's board whose flag chances are exact odds."""

    def __init__(self, view: GameState, seat: int, charge: float = 0.0) -> None:
        super().__init__(view, seat, charge)
        self.odds = FlagOdds(view, seat)

    def estimate(
        self, mine: list[int], theirs: list[int], size: int, fog: bool, placed: int
    ) -> float:
        # Every held card counts at every flag here: counted at one flag each, prob scored
        # 33.5% against itself (200 games, seed 9100).
        return self.odds.chance(mine, theirs, size, fog, placed)


class ProbBot(HeuristicBot):
    """The heuristic's decisions on exact odds (spec ``prob``)."""

    name = "prob"
    board_type = OddsBoard


_ROLLOUT_BOT = ProbBot()


def prob_policy(world: GameState, rng: random.Random) -> Action:
    """`prob` as a search's rollout policy: each seat decides from its own view of the
    sampled world, so a rollout models the opponent as a player who cannot see our hand."""
    return _ROLLOUT_BOT.choose(world.view(world.current_player), rng)
