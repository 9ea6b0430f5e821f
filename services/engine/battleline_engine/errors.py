"""Refusals: one exception type for every rejection, and its gRPC status.

Domain code raises `Refusal(code, reason, message)`; the servicers turn it
into a status with a google.rpc.ErrorInfo detail (domain "battleline.v1",
reason machine-readable) and, for rate limits, a google.rpc.RetryInfo. Rule
errors of the core map to codes here, so the mapping exists exactly once.
"""

from __future__ import annotations

from typing import Any, Final, NoReturn

import grpc
from google.protobuf import any_pb2, duration_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from battleline_rules import ErrorCode, RuleError

DOMAIN: Final = "battleline.v1"

# Every status code a battleline.v1 RPC may return (besides OK). Anything else
# is a bug; the property tests check it.
DOCUMENTED: Final = frozenset({
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.FAILED_PRECONDITION,
    grpc.StatusCode.ABORTED,
    grpc.StatusCode.UNAUTHENTICATED,
    grpc.StatusCode.PERMISSION_DENIED,
    grpc.StatusCode.NOT_FOUND,
    grpc.StatusCode.RESOURCE_EXHAUSTED,
    grpc.StatusCode.UNAVAILABLE,  # only when Redis cannot be reached
})


class Refusal(Exception):
    """A rejected request: status code, machine-readable reason, message for people."""

    def __init__(
        self, code: grpc.StatusCode, reason: str, message: str, retry_after_s: float | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.retry_after_s = retry_after_s

    def status(self) -> grpc.Status:
        """The rich status (ErrorInfo, plus RetryInfo when a retry delay is known)."""
        info = error_details_pb2.ErrorInfo(reason=self.reason, domain=DOMAIN)
        details = [_any(info)]
        if self.retry_after_s is not None:
            delay = duration_pb2.Duration()
            delay.FromNanoseconds(int(self.retry_after_s * 1e9))
            details.append(_any(error_details_pb2.RetryInfo(retry_delay=delay)))
        proto = status_pb2.Status(
            code=getattr(code_pb2, self.code.name), message=self.message, details=details
        )
        return rpc_status.to_status(proto)


def _any(message: Any) -> any_pb2.Any:
    packed = any_pb2.Any()
    packed.Pack(message)
    return packed


def shown(value: str, limit: int = 24) -> str:
    """A caller's value quoted in a message, cut to `limit` characters: a message never
    echoes a whole bad input (a long one would not fit in the status's metadata)."""
    return repr(value) if len(value) <= limit else f"{value[:limit]!r}... ({len(value)} chars)"


def invalid(reason: str, message: str) -> Refusal:
    """INVALID_ARGUMENT: the request itself is malformed."""
    return Refusal(grpc.StatusCode.INVALID_ARGUMENT, reason, message)


def precondition(reason: str, message: str) -> Refusal:
    """FAILED_PRECONDITION: well-formed, but the match is not in a state to accept it."""
    return Refusal(grpc.StatusCode.FAILED_PRECONDITION, reason, message)


def not_found(match_id: str) -> Refusal:
    """NOT_FOUND for a match id that was never created or has expired."""
    return Refusal(grpc.StatusCode.NOT_FOUND, "match-not-found", f"no match {match_id!r}")


# Rule errors are all FAILED_PRECONDITION (the request was readable, the game says
# no) except MALFORMED, which the engine catches before the core anyway.
_RULE_CODES: Final = {ErrorCode.MALFORMED: grpc.StatusCode.INVALID_ARGUMENT}


def from_rule_error(error: RuleError, action_text: str | None = None) -> Refusal:
    """The refusal for a rules-core rejection; the reason is the core's error code."""
    code = _RULE_CODES.get(error.code, grpc.StatusCode.FAILED_PRECONDITION)
    message = f"{action_text}: {error.message}" if action_text else error.message
    return Refusal(code, error.code.value, message)


async def abort(context: grpc.aio.ServicerContext[Any, Any], refusal: Refusal) -> NoReturn:
    """End the RPC with the refusal's rich status."""
    await context.abort_with_status(refusal.status())
    raise AssertionError("abort_with_status returned")  # pragma: no cover
