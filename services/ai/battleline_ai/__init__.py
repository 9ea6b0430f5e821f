"""Battle Line bots: random, heuristic and information-set MCTS, behind one interface.

Every bot decides from a seat's view (`GameState.view(seat)`) only, so the
same object serves the tournament harness, the hosted AI worker and hints.
"""

from .bots import Bot, RandomBot, make_bot

__all__ = ["Bot", "RandomBot", "make_bot"]
