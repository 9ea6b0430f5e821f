"""One decision from a seat's position text: what the worker's process pool and the
Suggest RPC run (and the worker itself, for the fallback, when no process is free in time).

Why a module of its own: it is the only code that runs in the search processes,
so it takes and returns plain picklable values (position text in, action text
and statistics out), and it only ever sees the seat's view -- the position text
the engine sends that seat, loaded with `load_position` -- never a full state.
"""

from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass, field

from battleline_rules import Action, GameState, Kind, Phase, format_action, load_position

from .bots import LEVELS, make_bot, parse_spec

log = logging.getLogger("battleline.ai")
MAX_LEVEL = max(LEVELS)
MIN_SECONDS = 0.05  # below this a search is pointless; the fallback answers anyway
FALLBACK = "heuristic"  # answers in milliseconds, from the seat's view like any bot
NOTHING_TO_DO = "the seat has nothing to do in this position"


def level_spec(level: int) -> str:
    """The bot spec of a hosted-AI level; the engine accepts 1..10, levels above the
    top one play as the top one."""
    return f"ismcts:level={min(max(level, 1), MAX_LEVEL)}"


def with_seconds(spec: str, seconds: float | None) -> str:
    """`spec` with a wall-time cap per move (ignored by the rule-based levels)."""
    if seconds is None or not spec.startswith("ismcts"):
        return spec
    sep = "," if ":" in spec else ":"
    return f"{spec}{sep}seconds={max(seconds, MIN_SECONDS):.3f}"


def concealing(spec: str) -> str:
    """`spec` searching on every decision it searches, even one it then plays unsearched
    (`conceal`): for the hosted AI's own plays, whose CPU a player can watch; a hint or a
    review reads the asker's own view, with nothing to conceal."""
    if not _searches(spec):
        return spec
    sep = "," if ":" in spec else ":"
    return f"{spec}{sep}conceal=1"


@dataclass
class Decision:
    """An action in the rules-core notation, and what backs it when it was searched."""

    action: str
    value: float = 0.5  # estimated chance the seat wins; 0.5 when not searched
    iterations: int = 0
    seconds: float = 0.0
    top: list[tuple[str, int, float]] = field(default_factory=list)  # action, visits, mean


def decide(position: str, spec: str, seconds: float | None, seed: int) -> Decision:
    """Choose the seat's action in `position` (a view's position text) with the bot
    `spec`, searching at most `seconds` of wall time."""
    from .ismcts import IsmctsBot

    view = load_position(position)
    actions = view.legal_actions()
    if not actions:  # Suggest answers a ValueError with bad-position
        raise ValueError(NOTHING_TO_DO)
    bot = make_bot(with_seconds(spec, seconds))
    rng = random.Random(seed)
    if not isinstance(bot, IsmctsBot) or not _searchable(view, actions):
        return Decision(format_action(bot.choose(view, rng)))
    result = bot.search(view, rng)
    ranked = sorted(result.stats.items(), key=lambda item: -item[1][0])
    top = [(format_action(a), visits, reward / visits if visits else 0.0)
           for a, (visits, reward) in ranked]
    if not top:  # played without a search (the ranking's clear best): its estimate alone
        top = [(format_action(result.action), 0, result.value)]
    return Decision(format_action(result.action), result.value, result.iterations,
                    result.seconds, top)


def _searchable(view: GameState, actions: list[Action]) -> bool:
    """Whether a searching bot searches this decision: a PLAY step with a choice (it
    takes claims at once and leaves draws, Scout returns and Mud discards to its rule)."""
    return _plays(view, actions) and len(actions) > 1


def is_play(position: str) -> bool:
    """Whether this decision is the turn's play (a card, or a pass): the one a searching
    level searches, and so the one whose thinking time the worker evens out."""
    view = load_position(position)
    return _plays(view, view.legal_actions())


def _plays(view: GameState, actions: list[Action]) -> bool:
    """The seat is to play (claims, taken at once, come first while any is open)."""
    if not actions:
        raise ValueError(NOTHING_TO_DO)
    return view.phase is Phase.PLAY and actions[0].kind is not Kind.CLAIM


def _level_spec(spec: str) -> str:
    """The spec a level stands for (`ismcts:level=3` is the heuristic), else `spec`."""
    kind, knobs = parse_spec(spec)
    level = knobs.get("level", "")
    return LEVELS.get(int(level), FALLBACK) if kind == "ismcts" and level.isdigit() else spec


def _searches(spec: str) -> bool:
    return parse_spec(_level_spec(spec))[0] == "ismcts"


def needs_search(position: str, spec: str) -> bool:
    """Whether `decide` would search here: a move that it would not (a draw, a claim, a
    forced or rule-based move) is cheap enough to make without a search process."""
    if not _searches(spec):
        return False
    view = load_position(position)
    return _searchable(view, view.legal_actions())


def at_once_spec(spec: str) -> str:
    """What plays `spec`'s move when there is no time to search: a level that does not
    search plays itself (a beginner's level stays a beginner's under load), any other
    the FALLBACK."""
    return FALLBACK if _searches(spec) else _level_spec(spec)


def decide_at_once(position: str, spec: str, seed: int) -> Decision:
    """`spec`'s move with no time left to search (`at_once_spec`): cheap enough for the
    worker's event loop when no search process comes free in time."""
    return decide(position, at_once_spec(spec), None, seed)


def decide_by(position: str, spec: str, deadline: float, seed: int) -> Decision:
    """`decide` with an absolute deadline (`time.monotonic()`, one clock for every process
    of the host), measured when the search process starts: time spent queueing for a
    process counts against the clock."""
    seconds = deadline - time.monotonic()
    if seconds < MIN_SECONDS:
        return decide_at_once(position, spec, seed)  # no time to search: answer now, not late
    try:
        return decide(position, spec, seconds, seed)
    except Exception:
        if at_once_spec(spec) == spec:
            raise
        # A defect in a search must not stall the match (the request would be reclaimed
        # and fail again): the rule-based bot answers this move.
        log.exception("search %s failed; the heuristic answers this move", spec)
        return decide_at_once(position, spec, seed)
