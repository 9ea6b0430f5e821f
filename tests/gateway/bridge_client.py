"""The engine test harness's `Client`, speaking Connect or gRPC-Web through the gateway."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from connectrpc.client import ConnectClientSync
from connectrpc.compat import google_protobuf_binary_codec, google_protobuf_json_codec
from connectrpc.protocol import ProtocolType

from battleline_gateway.bridge import method_info, public_methods
from tests.engine.harness import Client


class _Stub:
    """`stub.Method(request, metadata=..., timeout=...)` like a gRPC stub, over HTTP."""

    def __init__(self, http: ConnectClientSync, service: str) -> None:
        self._calls: dict[str, Callable[..., Any]] = {}
        for method in public_methods():
            if method.containing_service.name == service:
                self._calls[method.name] = self._caller(http, method)

    @staticmethod
    def _caller(http: ConnectClientSync, method: Any) -> Callable[..., Any]:
        info = method_info(method)

        def call(request: Any, metadata: Sequence[tuple[str, str]] = (),
                 timeout: float | None = None) -> Any:
            execute = http.execute_server_stream if method.server_streaming else (
                http.execute_unary)
            return execute(request=request, method=info, headers=dict(metadata),
                           timeout_ms=None if timeout is None else int(timeout * 1000))

        return call

    def __getattr__(self, name: str) -> Callable[..., Any]:
        return self._calls[name]


class BridgeClient(Client):
    """Same helpers (`create`, `view`, `submit`, `watch`...) as the gRPC harness client."""

    def __init__(self, url: str, protocol: ProtocolType, json: bool = False) -> None:
        codec = google_protobuf_json_codec() if json else google_protobuf_binary_codec()
        self.http = ConnectClientSync(url.rstrip("/"), protocol=protocol, codec=codec)
        super().__init__(channel=None)  # type: ignore[arg-type]

    def __post_init__(self) -> None:
        self.lobby = _Stub(self.http, "LobbyService")
        self.game = _Stub(self.http, "GameService")
        self.watcher = _Stub(self.http, "WatchService")
        self.record = _Stub(self.http, "RecordService")
