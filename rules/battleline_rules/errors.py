"""Typed rule errors: a machine-readable code plus a message a client can act on."""

from __future__ import annotations

from enum import Enum


class ErrorCode(Enum):
    """Why an action was rejected. The engine maps each to a gRPC status."""

    MALFORMED = "malformed"  # the action text or a field cannot be read
    GAME_OVER = "game-over"
    NOT_YOUR_TURN = "not-your-turn"
    WRONG_PHASE = "wrong-phase"  # e.g. drawing before playing
    CARD_NOT_IN_HAND = "card-not-in-hand"
    NO_SUCH_FLAG = "no-such-flag"
    FLAG_CLAIMED = "flag-claimed"
    SLOT_FULL = "slot-full"
    MUST_PLAY_TROOP = "must-play-troop"  # passing while a troop can be placed
    TACTICS_PARITY = "tactics-parity"
    LEADER_USED = "leader-used"
    BAD_TARGET = "bad-target"  # the card a tactic names is not where it must be
    DECK_EMPTY = "deck-empty"
    HAND_FULL = "hand-full"
    CLAIM_UNPROVEN = "claim-unproven"
    SIDE_INCOMPLETE = "side-incomplete"
    NOT_IN_RULESET = "not-in-ruleset"


class RuleError(Exception):
    """An action the rules do not allow; the state it was applied to is unchanged."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __repr__(self) -> str:
        return f"RuleError({self.code.value}: {self.message})"


def shown(value: str, limit: int = 24) -> str:
    """A caller's value quoted in a message, cut to `limit` characters: a message never
    echoes a whole bad input (a long one would not fit in a gRPC status's metadata)."""
    return repr(value) if len(value) <= limit else f"{value[:limit]!r}... ({len(value)} chars)"
