"""A refusal as gRPC sends it: the status code of its kind, a google.rpc.ErrorInfo
detail (domain "battleline.v1", the reason) and, for limits, a google.rpc.RetryInfo.

The servicer layer's half of errors.py: the only place where kinds meet codes.
"""

from __future__ import annotations

import logging
from typing import Any, Final, NoReturn

import grpc
from google.protobuf import any_pb2, duration_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from .errors import Kind, Refusal

DOMAIN: Final = "battleline.v1"
DEFECT: Final = "internal error: the server logged it"  # all a caller learns of a defect
log = logging.getLogger(__name__)

CODES: Final = {
    Kind.INVALID: grpc.StatusCode.INVALID_ARGUMENT,
    Kind.PRECONDITION: grpc.StatusCode.FAILED_PRECONDITION,
    Kind.CONFLICT: grpc.StatusCode.ABORTED,
    Kind.UNAUTHENTICATED: grpc.StatusCode.UNAUTHENTICATED,
    Kind.FORBIDDEN: grpc.StatusCode.PERMISSION_DENIED,
    Kind.NOT_FOUND: grpc.StatusCode.NOT_FOUND,
    Kind.EXHAUSTED: grpc.StatusCode.RESOURCE_EXHAUSTED,
    Kind.UNAVAILABLE: grpc.StatusCode.UNAVAILABLE,  # only when Redis (or the AI) is away
}

# Every status code a battleline.v1 RPC may return (besides OK). Anything else is a
# bug; the property tests check it.
DOCUMENTED: Final = frozenset(CODES.values())


def rich_status(refusal: Refusal) -> grpc.Status:
    """The status of a refusal (ErrorInfo, plus RetryInfo when a retry delay is known)."""
    info = error_details_pb2.ErrorInfo(reason=refusal.reason, domain=DOMAIN)
    details = [_any(info)]
    if refusal.retry_after_s is not None:
        delay = duration_pb2.Duration()
        delay.FromNanoseconds(int(refusal.retry_after_s * 1e9))
        details.append(_any(error_details_pb2.RetryInfo(retry_delay=delay)))
    proto = status_pb2.Status(
        code=getattr(code_pb2, CODES[refusal.kind].name), message=refusal.message, details=details
    )
    return rpc_status.to_status(proto)


def _any(message: Any) -> any_pb2.Any:
    packed = any_pb2.Any()
    packed.Pack(message)
    return packed


async def abort(context: grpc.aio.ServicerContext[Any, Any], refusal: Refusal) -> NoReturn:
    """End the RPC with the refusal's rich status."""
    await context.abort_with_status(rich_status(refusal))
    raise AssertionError("abort_with_status returned")  # pragma: no cover


async def end_with(context: grpc.aio.ServicerContext[Any, Any], err: Exception,
                   refusal: Refusal | None, handler: str) -> NoReturn:
    """End a call that raised `err`: `refusal` (what `err` stands for) with its rich
    status; without one, `err` is a defect, logged with its traceback and answered
    INTERNAL with DEFECT, never Python's text of the exception (gRPC's default, UNKNOWN
    "Unexpected <class ...>: ...", gave a client Redis's error and the line of the script
    it failed on). gRPC's own abort passes. Call it from the `except` block."""
    if isinstance(err, grpc.aio.AbortError):
        raise err
    if refusal is None:
        log.exception("%s failed", handler)
        await context.abort(grpc.StatusCode.INTERNAL, DEFECT)
    await abort(context, refusal)
