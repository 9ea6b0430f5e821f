"""The exact endgame: a move is played only when it wins by force, checked by brute force."""

from __future__ import annotations

from battleline_ai import endgame
from battleline_rules import GameState, new_game
from tests.ai.endgames import endgame_positions


def minimax(state: GameState, seat: int) -> float:
    """The value for ``seat`` with no pruning: 1 win, 0.5 draw, 0 loss."""
    if state.is_over:
        return 0.5 if state.winner is None else float(state.winner == seat)
    values = []
    for action in endgame.moves(state):
        child = state.clone()
        child.apply_unchecked(action)
        values.append(minimax(child, seat))
    return max(values) if state.current_player == seat else min(values)


def test_solve_plays_only_proven_wins() -> None:
    positions = endgame_positions(12)
    assert len(positions) == 12, "the seeds should reach 12 positions with both decks empty"
    wins = 0
    for view in positions:
        world = endgame.known_world(view)
        assert world is not None
        seat = world.current_player
        values = {}
        for action in endgame.moves(world):
            child = world.clone()
            child.apply_unchecked(action)
            values[action] = minimax(child, seat)
        chosen = endgame.solve(view, budget=10**7)
        if any(v == 1.0 for v in values.values()):
            assert chosen is not None and values[chosen] == 1.0
            wins += 1
        else:
            assert chosen is None
    assert 0 < wins < len(positions), "the positions should mix won and unproven ones"


def test_a_hidden_deck_leaves_the_move_to_the_search() -> None:
    view = new_game("standard", seed=7).view(0)
    assert endgame.known_world(view) is None
    assert endgame.solve(view) is None


def test_a_position_over_budget_is_not_guessed() -> None:
    view = endgame_positions(1)[0]
    assert endgame.solve(view, budget=1) is None
