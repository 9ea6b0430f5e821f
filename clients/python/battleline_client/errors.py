"""Typed exceptions for every status the engine returns.

The engine rejects with a gRPC status code plus a google.rpc.ErrorInfo detail
(domain "battleline.v1") whose `reason` is machine-readable, and a
google.rpc.RetryInfo for rate limits. Callers should be able to write
`except StaleVersion` or `except IllegalAction as e: e.reason` instead of
digging through trailing metadata, so the mapping lives here, once, for the
sync and the asyncio client alike.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import grpc
from google.protobuf.message import DecodeError
from google.rpc import error_details_pb2, status_pb2

from .printable import plain

DOMAIN = "battleline.v1"
DETAILS_KEY = "grpc-status-details-bin"


class BattleLineError(Exception):
    """A call the engine (or the transport) refused.

    `code` is the gRPC status code, `reason` the ErrorInfo reason ("" when the
    status carries none, as for transport errors), `retry_after` the RetryInfo
    delay in seconds when the server gave one.
    """

    code: grpc.StatusCode = grpc.StatusCode.UNKNOWN

    def __init__(self, message: str, *, code: grpc.StatusCode | None = None, reason: str = "",
                 retry_after: float | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        self.message = message
        self.reason = reason
        self.retry_after = retry_after

    def __str__(self) -> str:
        tag = f"{self.code.name}/{self.reason}" if self.reason else self.code.name
        return f"[{tag}] {self.message}"


class InvalidRequest(BattleLineError):
    """INVALID_ARGUMENT: the request is malformed (bad action text, option, id...)."""

    code = grpc.StatusCode.INVALID_ARGUMENT


class IllegalAction(BattleLineError):
    """FAILED_PRECONDITION: the rules say no, or the match cannot accept it now
    (reason "waiting", "game-over", "match-full" or a rules-core code such as
    "flag-claimed", "tactics-parity")."""

    code = grpc.StatusCode.FAILED_PRECONDITION


class StaleVersion(BattleLineError):
    """ABORTED: the match moved on since the view the action was decided on."""

    code = grpc.StatusCode.ABORTED


class Unauthenticated(BattleLineError):
    """UNAUTHENTICATED: missing, malformed or unknown seat token."""

    code = grpc.StatusCode.UNAUTHENTICATED


class PermissionDenied(BattleLineError):
    """PERMISSION_DENIED: the token is for another match, or the seat is reserved."""

    code = grpc.StatusCode.PERMISSION_DENIED


class NotYourTurn(PermissionDenied):
    """PERMISSION_DENIED with reason "not-your-turn"."""


class NotFound(BattleLineError):
    """NOT_FOUND: no such match (or it expired), or no such invite code."""

    code = grpc.StatusCode.NOT_FOUND


class RateLimited(BattleLineError):
    """RESOURCE_EXHAUSTED: too many requests or streams; wait `retry_after` seconds."""

    code = grpc.StatusCode.RESOURCE_EXHAUSTED


class Unavailable(BattleLineError):
    """UNAVAILABLE: the server (or its Redis) cannot be reached; safe to retry."""

    code = grpc.StatusCode.UNAVAILABLE


class Timeout(BattleLineError):
    """DEADLINE_EXCEEDED: no answer within the call's timeout."""

    code = grpc.StatusCode.DEADLINE_EXCEEDED


_BY_CODE: dict[grpc.StatusCode, type[BattleLineError]] = {
    cls.code: cls for cls in (InvalidRequest, IllegalAction, StaleVersion, Unauthenticated,
                              PermissionDenied, NotFound, RateLimited, Unavailable,
                              Timeout)
}
_BY_REASON: dict[str, type[BattleLineError]] = {"not-your-turn": NotYourTurn}


def _status_details(trailing: Iterable[tuple[str, Any]] | None) -> tuple[str, float | None]:
    """(ErrorInfo reason, RetryInfo seconds) from a call's trailing metadata. A server's
    details are its own text: undecodable ones are ignored and a delay is never below 0,
    so a hostile or broken server cannot turn its error into a client's traceback."""
    reason, retry = "", None
    for key, value in trailing or ():
        if key != DETAILS_KEY:
            continue
        try:
            status = status_pb2.Status.FromString(value)
            for detail in status.details:
                # types-protobuf: Message.DESCRIPTOR may be upb's Descriptor, which Any.Is
                # does not take in its stub (upb's is a descriptor.Descriptor at runtime)
                if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):  # type: ignore[arg-type]
                    info = error_details_pb2.ErrorInfo()
                    detail.Unpack(info)
                    reason = info.reason
                elif detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):  # type: ignore[arg-type]
                    delay = error_details_pb2.RetryInfo()
                    detail.Unpack(delay)
                    retry = max(0.0, delay.retry_delay.ToNanoseconds() / 1e9)
        except (DecodeError, TypeError):  # TypeError: details that are not bytes
            continue
    return reason, retry


def from_rpc_error(error: grpc.RpcError) -> BattleLineError:
    """The typed exception for a failed call (sync `grpc.RpcError` or `grpc.aio.AioRpcError`)."""
    code: grpc.StatusCode = error.code()
    message = plain(error.details() or code.name)  # a hostile server's text is text
    # typeshed types these items as objects with .key and .value only; grpc's own annotation
    # (and aio's Metadata) is (key, value) tuples
    reason, retry = _status_details(error.trailing_metadata())  # type: ignore[arg-type]
    reason = plain(reason)
    cls = _BY_REASON.get(reason) or _BY_CODE.get(code, BattleLineError)
    return cls(message, code=code, reason=reason, retry_after=retry)


__all__ = [
    "BattleLineError", "IllegalAction", "InvalidRequest", "NotFound",
    "NotYourTurn", "PermissionDenied", "RateLimited", "StaleVersion", "Timeout",
    "Unauthenticated", "Unavailable", "from_rpc_error",
]
