"""A refusal as gRPC sends it: the status code of its kind, a google.rpc.ErrorInfo
detail (domain "battleline.v1", the reason) and, for limits, a google.rpc.RetryInfo.

The servicer layer's half of errors.py: the only place where kinds meet codes.
"""

from __future__ import annotations

from typing import Any, Final, NoReturn

import grpc
from google.protobuf import any_pb2, duration_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from .errors import Kind, Refusal

DOMAIN: Final = "battleline.v1"

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
