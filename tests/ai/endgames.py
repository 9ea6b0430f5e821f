"""Positions where both decks are empty, from seeded heuristic games (the endgame tests)."""

from __future__ import annotations

import random

from battleline_ai import endgame
from battleline_ai.bots import make_bot
from battleline_rules import GameState, new_game


def endgame_positions(count: int) -> list[GameState]:
    """Views (seat to act) from seeded games once both decks are empty."""
    bot = make_bot("heuristic")
    found: list[GameState] = []
    for seed in range(2000, 2400):
        state = new_game("standard", seed=seed)
        rng = random.Random(seed)
        while not state.is_over:
            view = state.view(state.current_player)
            if len(view.legal_actions()) > 1 and endgame.known_world(view) is not None:
                found.append(view)
                if len(found) == count:
                    return found
            state.apply(bot.choose(view, rng))
    return found
