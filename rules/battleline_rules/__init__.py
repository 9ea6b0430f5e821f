"""The Battle Line rules core: pure, fast, no I/O.

Engine and AI both stand on it. Start with `new_game`, then
`legal_actions` / `apply`; `view` hides what a seat may not see and
`sample_world` deals the hidden cards back at random for search.
"""

from types import BuiltinFunctionType

from .actions import DISCARD, TACTIC_DECK, TROOP_DECK, Action, Kind, format_action, parse_action
from .cards import UNKNOWN_TACTIC, UNKNOWN_TROOP, Tactic, card_name, parse_card
from .claims import ClaimVerdict, Grounds, Voice, decide_claim
from .errors import ErrorCode, RuleError
from .formations import Formation, best_formation, brute_force_best, describe
from .notation import MAX_REPEAT, dump_position, load_position
from .outcome import Outcome, Termination
from .record import GameRecord, next_first_player, record_of, series_points
from .rulesets import RULESETS, ClaimTiming, Options, Ruleset
from .state import SPECTATOR, Event, GameState, Phase, new_game, redact_event

__all__ = [
    "DISCARD",
    "MAX_REPEAT",
    "RULESETS",
    "SPECTATOR",
    "TACTIC_DECK",
    "TROOP_DECK",
    "UNKNOWN_TACTIC",
    "UNKNOWN_TROOP",
    "Action",
    "ClaimTiming",
    "ClaimVerdict",
    "ErrorCode",
    "Event",
    "Formation",
    "GameRecord",
    "GameState",
    "Grounds",
    "Kind",
    "Options",
    "Outcome",
    "Phase",
    "RuleError",
    "Ruleset",
    "Tactic",
    "Termination",
    "Voice",
    "best_formation",
    "brute_force_best",
    "card_name",
    "decide_claim",
    "describe",
    "dump_position",
    "format_action",
    "is_compiled",
    "load_position",
    "new_game",
    "next_first_player",
    "parse_action",
    "parse_card",
    "record_of",
    "redact_event",
    "series_points",
]


def is_compiled() -> bool:
    """Whether these modules run as mypyc-compiled extensions (setup.py): compiled
    functions are built-in functions."""
    return isinstance(new_game, BuiltinFunctionType)
