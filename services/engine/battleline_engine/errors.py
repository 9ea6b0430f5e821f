"""Refusals: one exception type for every rejection, as the domain says it.

Domain code raises `Refusal(kind, reason, message)`: what kind of no it is, a
machine-readable reason and a message for people. No grpc here: the servicer
layer (status.py) maps each kind to its status code and adds the google.rpc
details. Rule errors of the core map to kinds here, so that mapping exists once.
"""

from __future__ import annotations

from enum import Enum
from typing import Final

from battleline_rules import ErrorCode, RuleError
from battleline_rules.errors import shown


class Kind(Enum):
    """What kind of refusal: each is one status code to the servicer layer."""

    INVALID = "invalid"  # the request itself is malformed
    PRECONDITION = "precondition"  # well-formed, but the match cannot accept it now
    CONFLICT = "conflict"  # lost a race with another write: refetch and retry
    UNAUTHENTICATED = "unauthenticated"  # no credential, or an unknown one
    FORBIDDEN = "forbidden"  # a known caller that may not do this
    NOT_FOUND = "not-found"  # no such match (or invite): never made, or expired
    EXHAUSTED = "exhausted"  # a limit is reached: later, or less
    UNAVAILABLE = "unavailable"  # something the engine needs cannot answer now


class Refusal(Exception):
    """A rejected request: its kind, machine-readable reason, message for people, and
    (for limits) when a retry may succeed."""

    def __init__(
        self, kind: Kind, reason: str, message: str, retry_after_s: float | None = None
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.reason = reason
        self.message = message
        self.retry_after_s = retry_after_s


def invalid(reason: str, message: str) -> Refusal:
    """The request itself is malformed."""
    return Refusal(Kind.INVALID, reason, message)


def precondition(reason: str, message: str) -> Refusal:
    """Well-formed, but the match is not in a state to accept it."""
    return Refusal(Kind.PRECONDITION, reason, message)


def not_found(match_id: str) -> Refusal:
    """A match id that was never created or has expired."""
    return Refusal(Kind.NOT_FOUND, "match-not-found", f"no match {shown(match_id)}")


# Rule errors are all PRECONDITION (the request was readable, the game says no)
# except MALFORMED, which the engine catches before the core anyway.
_RULE_KINDS: Final = {ErrorCode.MALFORMED: Kind.INVALID}


def from_rule_error(error: RuleError, action_text: str | None = None) -> Refusal:
    """The refusal for a rules-core rejection; the reason is the core's error code."""
    kind = _RULE_KINDS.get(error.code, Kind.PRECONDITION)
    message = f"{action_text}: {error.message}" if action_text else error.message
    return Refusal(kind, error.code.value, message)
