"""Connect and gRPC-Web endpoints that forward each call to the engine over gRPC.

The endpoints are built from the protos' service descriptors, so a method
added to the contract is bridged without code here. Calls carry the caller's
`authorization` header through; engine errors come back with their code,
message and rich details (google.rpc.ErrorInfo, RetryInfo) intact. A header
gRPC cannot carry, a body past MAX_REQUEST_BYTES or one that is not the method's
request is refused here, in the engine's terms (code and ErrorInfo reason), and
no failure of grpc or of a decoder itself reaches a browser as text. A call past its
address's request rate (see rate.py) is refused before its body is read.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from contextvars import ContextVar
from types import ModuleType
from typing import Any

import grpc
from connectrpc.code import Code
from connectrpc.codec import Codec
from connectrpc.compat import google_protobuf_binary_codec, google_protobuf_json_codec
from connectrpc.compression.gzip import GzipCompression
from connectrpc.errors import ConnectError, ErrorDetail
from connectrpc.interceptor import MetadataInterceptor
from connectrpc.method import IdempotencyLevel, MethodInfo, StreamType
from connectrpc.request import RequestContext
from connectrpc.server import ConnectASGIApplication, Endpoint
from google.protobuf import descriptor, symbol_database
from google.protobuf.message import Message
from google.rpc import error_details_pb2, status_pb2
from protobuf.wkt import Any as DetailAny
from starlette.types import Receive, Scope, Send

from battleline.v1 import game_pb2, lobby_pb2, record_pb2, watch_pb2
from battleline_client.errors import DETAILS_KEY
from battleline_client.port_owner import AsyncOwnerCheck
from battleline_engine.auth import FORWARDED_FOR, GATEWAY_CLIENT, GATEWAY_SECRET, address_key
from battleline_engine.errors import Refusal
from battleline_engine.ratelimit import OpenCounts
from battleline_engine.status import DOMAIN, rich_status

from .rate import RequestRate

log = logging.getLogger(__name__)

# The services a browser may call: the engine's public contract (not AiService).
PUBLIC_SERVICES: tuple[ModuleType, ...] = (lobby_pb2, game_pb2, watch_pb2, record_pb2)

# An answer whose JSON the codec keeps (binary size): a series' record (a 1,234-event one
# is 44 KB), not a view (about 2 KB), an event or one game's record (about 5 KB).
LARGE_ANSWER_BYTES = 8 * 1024
# Request headers passed on to the engine: the seat token.
FORWARDED_HEADERS = ("authorization",)
# What a call cut by the gateway's shutdown gets: a Watch resumes from its last event.
RESTARTING = ConnectError(Code.UNAVAILABLE, "the web gateway is restarting: call again")
# gRPC carries a text header's value in printable ASCII only, and the engine takes 16 KiB
# of metadata per call in all; `Bearer <seat token>` is 68 characters.
MAX_HEADER_CHARS = 1024
# The largest request a browser sends is a SubmitAction: 1.3 KB of JSON even with 16
# actions and the longest ids and action texts the engine takes (a display name is at
# most 40 characters; a usual request is a few hundred bytes). Decoding JSON takes this
# process (the engine's, under serve) up to 0.4 ms of its event loop per KiB: connectrpc
# refuses a body (or a decompressed one) past this with RESOURCE_EXHAUSTED while reading
# it, before decoding anything. It took 256 KiB, at 0.1 s of CPU each; the engine's own
# cap (ServerConfig.max_request_bytes) is 8 KiB too.
MAX_REQUEST_BYTES = 8 * 1024
# The name of a request header that is not UTF-8, for the endpoint to refuse (see
# EngineBridge.__call__); set in the request's own task.
_UNDECODABLE: ContextVar[str] = ContextVar("undecodable_header", default="")
# Headers of the Connect and gRPC-Web protocols that connectrpc refuses itself, with a
# message quoting the value: only a value of this form reaches it as it is.
PROTOCOL_HEADERS = frozenset({b"connect-timeout-ms", b"connect-protocol-version",
                              b"content-encoding", b"connect-content-encoding",
                              b"grpc-timeout", b"grpc-encoding"})
_PLAIN_TOKEN = re.compile(rb"[A-Za-z0-9.+-]{1,24}")


class Upstream:
    """The gRPC channel to the engine, and whether the gateway is shutting it down.

    With the engine's gateway secret, each call carries the browser's address, so the
    engine's per-client limits apply per browser, not to the gateway as a whole; the
    secret is what makes the engine believe it (see battleline_engine.auth.Callers).
    """

    def __init__(self, engine_address: str, secret: str = "") -> None:
        # Its calls carry the secret and browsers' tokens: none to another user's process
        # on the engine's port (`AsyncOwnerCheck`; twenty-ninth audit).
        self.channel = grpc.aio.insecure_channel(
            engine_address, interceptors=[AsyncOwnerCheck(engine_address, strict=True)])
        self.closing = False
        self.secret = secret

    async def close(self, grace_s: float) -> None:
        """Let running calls finish for `grace_s`, then cancel the rest (watch streams)."""
        self.closing = True
        await self.channel.close(grace=grace_s)


class EngineBridge(ConnectASGIApplication[Upstream]):
    """One ASGI app serving every public method at `/battleline.v1.Service/Method`."""

    path = "/"

    def __init__(self, upstream: Upstream, rate: RequestRate, max_streams: int) -> None:
        # connectrpc types `endpoints` with a private union of Endpoint's subclasses, not
        # with the public Endpoint its factories build
        super().__init__(service=upstream,
                         endpoints=forwarding_endpoints,  # type: ignore[arg-type]
                         interceptors=[_Admission(rate, max_streams)],
                         codecs=[_PlainCodec(google_protobuf_binary_codec(), "binary protobuf"),
                                 json_codec()],
                         compressions=[_PlainGzip()], read_max_bytes=MAX_REQUEST_BYTES)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass a request with a header that is not UTF-8 on with that value replaced,
        for its endpoint to refuse: connectrpc decodes every header before any endpoint
        runs and fails on such bytes with HTTP 500, Python's error text and a traceback,
        while an endpoint's refusal is written in whichever protocol the caller speaks.
        A malformed protocol header (`PROTOCOL_HEADERS`) reaches connectrpc as
        `(invalid)`: it refuses those itself, quoting the value whole (tenth audit)."""
        if scope["type"] == "http":
            scope = {**scope, "headers": _plain_protocol_headers(scope["headers"])}
        undecodable = _undecodable(scope["headers"]) if scope["type"] == "http" else None
        if undecodable is None:
            await super().__call__(scope, receive, send)
            return
        mark = _UNDECODABLE.set(undecodable)
        try:
            decodable = [(_utf8(name), _utf8(value)) for name, value in scope["headers"]]
            await super().__call__({**scope, "headers": decodable}, receive, send)
        finally:
            _UNDECODABLE.reset(mark)


class _Admission(MetadataInterceptor[str | None]):
    """Counts each call against its address's request rate as it starts, and each Watch
    against its address's streams while it lasts. connectrpc runs a metadata interceptor
    at the front of the list before it reads the request's body, and writes its refusal
    in the caller's protocol; a Watch counts once against the rate, when opened.

    Why a cap on streams below the connection cap: a stream holds its connection for as
    long as its match lasts, so one client (every local user is one: loopback) opening
    as many as it may hold connections kept every other browser off the port for hours
    (eleventh audit: 64 spectator streams, 0 of 24 page loads)."""

    def __init__(self, rate: RequestRate, max_streams: int) -> None:
        self.rate = rate
        self.max_streams = max_streams
        self.streams = OpenCounts()  # open Watch streams per address key

    async def on_start(self, ctx: RequestContext[Any, Any]) -> str | None:
        host = client_host(ctx)
        if (refusal := self.rate.over(host)) is not None:
            raise refused(refusal)
        if ctx.method.stream_type is not StreamType.SERVER_STREAM or host is None:
            return None
        key = address_key(host)
        if self.streams.full(key, self.max_streams):
            raise _refusal(Code.RESOURCE_EXHAUSTED, "web-streams-per-address",
                           f"at most {self.max_streams} Watch streams per client on the "
                           "web port: close one first")
        self.streams.take(key)
        return key

    async def on_end(self, key: str | None, ctx: RequestContext[Any, Any],
                     error: Exception | None, /) -> None:
        if key is not None:
            self.streams.release(key)


def json_codec() -> _PlainCodec:
    """The bridge's JSON codec: plain refusals, and the last 16 large answers kept."""
    return _PlainCodec(google_protobuf_json_codec(), "JSON", object_only=True,
                       repeats_kept=16)


class _PlainCodec(Codec[Message, Message]):
    """A connectrpc codec whose decoding failures say only what was expected: connectrpc
    answers with the decoder's own text (json's, protobuf's, int()'s), which quoted up
    to 199 characters of the caller's value.

    With `repeats_kept`, it keeps the encodings of that many of the large answers it sent
    last, by their binary form: JSON is encoded in Python, about 170 times dearer than
    binary (16 ms for the record of a 1,234-event series), and one address reading such a
    record at its rate held a sixth of a core more than over gRPC (thirty-third audit)."""

    def __init__(self, codec: Codec, form: str, object_only: bool = False,
                 repeats_kept: int = 0) -> None:
        self._codec = codec
        self._form = form
        self._object_only = object_only  # JSON: a request is one object, nothing else
        self._keeps_repeats = repeats_kept > 0
        self._repeat = functools.lru_cache(maxsize=repeats_kept)(self._encode_binary)

    def name(self) -> str:
        return self._codec.name()

    def encode(self, message: Message) -> bytes:
        if self._keeps_repeats:
            binary = message.SerializeToString(deterministic=True)
            if len(binary) >= LARGE_ANSWER_BYTES:
                return self._repeat(message.DESCRIPTOR.full_name, binary)
        return self._codec.encode(message)

    def kept(self) -> tuple[int, int]:
        """How many answers were sent again from what is kept, and how many are kept."""
        info = self._repeat.cache_info()
        return info.hits, info.currsize

    def _encode_binary(self, message_name: str, binary: bytes) -> bytes:
        message: Message = symbol_database.Default().GetSymbol(message_name)()
        message.ParseFromString(binary)
        return self._codec.encode(message)

    def decode(self, data: bytes | bytearray, message_class: type[Message]) -> Message:
        try:
            if self._object_only and bytes(data).lstrip()[:1] != b"{":
                raise ValueError("not a JSON object")  # protobuf's parser read `[]` as {}
            message: Message = self._codec.decode(data, message_class)
        except Exception:  # json's, protobuf's, a recursion limit: the caller's fault
            name = message_class.DESCRIPTOR.full_name
            raise _refusal(Code.INVALID_ARGUMENT, "bad-request",
                           f"request body is not a valid {name} in {self._form}") from None
        return message


class _PlainGzip(GzipCompression):
    """gzip, whose failures to decompress say so in our words, not zlib's."""

    def decompress(self, data: bytes | bytearray | memoryview,
                   read_max_bytes: int | None = None) -> bytes:
        try:
            return super().decompress(data, read_max_bytes)
        except ConnectError:
            raise  # past the size limit: RESOURCE_EXHAUSTED, which says so
        except Exception:  # zlib's, EOFError: the caller's bytes
            raise _refusal(Code.INVALID_ARGUMENT, "bad-request",
                           "request body is not valid gzip") from None


def _plain_protocol_headers(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """`headers` with each protocol header that is not a short plain token (a timeout, a
    version, an encoding's name) replaced by `(invalid)`, which connectrpc may quote."""
    if not any(name in PROTOCOL_HEADERS and not _PLAIN_TOKEN.fullmatch(value)
               for name, value in headers):
        return headers
    return [(name, b"(invalid)" if name in PROTOCOL_HEADERS
             and not _PLAIN_TOKEN.fullmatch(value) else value) for name, value in headers]


def _undecodable(headers: Iterable[tuple[bytes, bytes]]) -> str | None:
    """The name of the first header whose name or value is not UTF-8, if any."""
    for name, value in headers:
        try:
            name.decode()
            value.decode()
        except UnicodeDecodeError:
            return name.decode("latin-1")
    return None


def _utf8(raw: bytes) -> bytes:
    """`raw` read as HTTP's legacy latin-1 and written as UTF-8, which connectrpc reads."""
    return raw.decode("latin-1").encode()


def public_methods() -> Iterator[descriptor.MethodDescriptor]:
    """Every method of the public services."""
    for module in PUBLIC_SERVICES:
        for service in module.DESCRIPTOR.services_by_name.values():
            yield from service.methods


def method_path(method: descriptor.MethodDescriptor) -> str:
    """The URL path (and gRPC method name) of `method`: `/package.Service/Method`."""
    return f"/{method.containing_service.full_name}/{method.name}"


def method_info(method: descriptor.MethodDescriptor) -> MethodInfo[Any, Any]:
    """What connectrpc needs to know of `method` (servers and clients alike)."""
    symbols = symbol_database.Default()
    return MethodInfo(
        name=method.name, service_name=method.containing_service.full_name,
        input=symbols.GetSymbol(method.input_type.full_name),
        output=symbols.GetSymbol(method.output_type.full_name),
        idempotency_level=IdempotencyLevel.UNKNOWN,
        stream_type=StreamType.SERVER_STREAM if method.server_streaming else StreamType.UNARY,
    )


def forwarding_endpoints(upstream: Upstream) -> Mapping[str, Endpoint[Any, Any]]:
    """An endpoint per public method, keyed by its URL path."""
    return {method_path(method): _forwarding_endpoint(upstream, method)
            for method in public_methods()}


def _forwarding_endpoint(upstream: Upstream,
                         method: descriptor.MethodDescriptor) -> Endpoint[Any, Any]:
    info = method_info(method)
    path = method_path(method)
    serializers = {"request_serializer": info.input.SerializeToString,
                   "response_deserializer": info.output.FromString}
    if method.server_streaming:
        stream_call = upstream.channel.unary_stream(path, **serializers)

        async def forward_stream(request: Any, ctx: RequestContext[Any, Any]) -> AsyncIterator[Any]:
            metadata = _metadata(ctx, upstream)
            try:
                async for response in stream_call(request, metadata=metadata,
                                                  timeout=_timeout_s(ctx)):
                    yield response
            except grpc.aio.AioRpcError as error:
                raise connect_error(error) from None
            except asyncio.CancelledError:
                if not upstream.closing:
                    raise  # the browser hung up
                raise RESTARTING from None  # cut by the gateway's shutdown: reconnect
            except Exception:  # a bug of ours: its text is not the browser's
                raise _not_forwarded(upstream, path) from None

        return Endpoint.server_stream(info, forward_stream)

    unary_call = upstream.channel.unary_unary(path, **serializers)

    async def forward_unary(request: Any, ctx: RequestContext[Any, Any]) -> Any:
        metadata = _metadata(ctx, upstream)
        try:
            return await unary_call(request, metadata=metadata, timeout=_timeout_s(ctx))
        except grpc.aio.AioRpcError as error:
            raise connect_error(error) from None
        except Exception:  # a bug of ours: its text is not the browser's
            raise _not_forwarded(upstream, path) from None

    return Endpoint.unary(info, forward_unary)


def _not_forwarded(upstream: Upstream, path: str) -> ConnectError:
    """Log the failure in flight (with its traceback) and say only that the call failed;
    during the gateway's shutdown (a closed channel), say to call again."""
    if upstream.closing:
        return RESTARTING
    log.exception("web call not forwarded", extra={"method": path})
    return ConnectError(Code.INTERNAL, "the web gateway could not forward the call")


def _metadata(ctx: RequestContext[Any, Any], upstream: Upstream) -> tuple[tuple[str, str], ...]:
    """The engine call's metadata, every value checked first: grpc fails a call with a
    value it cannot carry with its internals as the error text, and its C core writes
    an error block to stderr, past the log and its repeat limit."""
    if undecodable := _UNDECODABLE.get():
        raise _bad_header(undecodable, "must be UTF-8")
    headers = ctx.request_headers
    passed = tuple((name, _carried(name, headers[name]))
                   for name in FORWARDED_HEADERS if name in headers)
    host = client_host(ctx)
    if host is None or not upstream.secret:
        return passed
    return (*passed, (GATEWAY_SECRET, upstream.secret),
            (GATEWAY_CLIENT, _carried(FORWARDED_FOR, host)))


def client_host(ctx: RequestContext[Any, Any]) -> str | None:
    """The caller's address: the peer's, or behind a configured proxy the one uvicorn
    read from x-forwarded-for; None for an unknown transport."""
    client = ctx.client_address  # "host:port"
    return None if client is None else client.rsplit(":", 1)[0].strip("[]")


def _carried(header: str, value: str) -> str:
    """`value` if gRPC can carry it as metadata, else the refusal of `header`."""
    if len(value) <= MAX_HEADER_CHARS and value.isascii() and value.isprintable():
        return value
    raise _bad_header(header, f"must be printable ASCII, at most {MAX_HEADER_CHARS} characters")


def _bad_header(header: str, rule: str) -> ConnectError:
    """The refusal of a header, as the engine refuses a malformed one (never its value)."""
    if header == "authorization":
        return _refusal(Code.UNAUTHENTICATED, "bad-token",
                       "authorization must be 'Bearer <seat token>'")
    return _refusal(Code.INVALID_ARGUMENT, "bad-header", f"header {header} {rule}")


def _refusal(code: Code, reason: str, message: str) -> ConnectError:
    """A refusal of the gateway's own, with the ErrorInfo an engine refusal carries."""
    info = error_details_pb2.ErrorInfo(reason=reason, domain=DOMAIN)
    detail = DetailAny(type_url=f"type.googleapis.com/{info.DESCRIPTOR.full_name}",
                       value=info.SerializeToString())
    return ConnectError(code, message, [ErrorDetail(detail)])


def _timeout_s(ctx: RequestContext[Any, Any]) -> float | None:
    timeout_ms = ctx.timeout_ms
    return None if timeout_ms is None else timeout_ms / 1000


def connect_error(error: grpc.aio.AioRpcError) -> ConnectError:
    """The engine's status as a Connect error: same code, message and details.

    A status without details is not an engine refusal but grpc's own (the engine
    unreachable, a deadline, a transport limit), whose text names internals such as
    addresses and header sizes: only its code is passed on.
    """
    code = connect_code(error.code())
    details = _details(error.trailing_metadata() or ())
    if details is None:
        return ConnectError(code, "the call to the engine failed")
    return ConnectError(code, error.details() or "", details)


def connect_code(code: grpc.StatusCode) -> Code:
    """Connect's name for a gRPC status code. Connect spells CANCELED with one L (looked
    up by gRPC's spelling, an engine call cancelled under load raised KeyError: HTTP 500
    and a traceback); OK is no error, so it stands for UNKNOWN."""
    if code is grpc.StatusCode.CANCELLED:
        return Code.CANCELED
    return Code.__members__.get(code.name, Code.UNKNOWN)


def refused(refusal: Refusal) -> ConnectError:
    """A refusal of the gateway's own as the engine would send it (status.rich_status):
    its code, message, ErrorInfo and RetryInfo."""
    status = rich_status(refusal)
    return ConnectError(connect_code(status.code), status.details,
                        _details(status.trailing_metadata) or [])


def _details(metadata: Iterable[tuple[str, str | bytes]]) -> list[ErrorDetail] | None:
    """The rich details of a gRPC status's trailing metadata; None without any."""
    for key, value in metadata:
        if key == DETAILS_KEY and isinstance(value, bytes):
            status = status_pb2.Status.FromString(value)
            return [ErrorDetail(DetailAny(type_url=item.type_url, value=item.value))
                    for item in status.details]
    return None
