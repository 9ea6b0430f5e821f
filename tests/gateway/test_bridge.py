"""The web gateway: browsers' protocols (Connect, gRPC-Web) reach the same engine,
with the same answers, secrets and refusals as native gRPC."""

from __future__ import annotations

import json
import random
import threading
import urllib.error
import urllib.request

import grpc
import pytest
from connectrpc.code import Code
from connectrpc.compat import google_protobuf_json_codec
from connectrpc.errors import ConnectError
from connectrpc.protocol import ProtocolType
from google.rpc import error_details_pb2

from battleline.v1 import record_pb2, types_pb2
from battleline_gateway.bridge import LARGE_ANSWER_BYTES, connect_error, json_codec
from tests.engine.harness import Client, Engine, play_local

from .bridge_client import BridgeClient
from .conftest import GatewayThread

PROTOCOLS = {
    "connect-json": (ProtocolType.CONNECT, True),
    "connect-binary": (ProtocolType.CONNECT, False),
    "grpc-web": (ProtocolType.GRPC_WEB, False),
}


@pytest.mark.parametrize("name", PROTOCOLS)
def test_a_whole_match_and_its_record_through_the_bridge(gateway: str, name: str) -> None:
    protocol, json = PROTOCOLS[name]
    client = BridgeClient(gateway, protocol, json)
    played = play_local(client, "standard", random.Random(7))
    assert played.final is not None
    assert played.final.phase == types_pb2.MATCH_PHASE_FINISHED
    record = client.get_record(played.match_id, played.tokens[0])
    assert record.complete and record.HasField("seed")  # every card revealed after the end


def test_a_record_read_again_as_json_is_the_same_record(gateway: str, engine: Engine) -> None:
    """The JSON of a large answer is kept and sent again (thirty-third audit): a record
    read twice over Connect JSON, and another after one more game, each the engine's."""
    native = Client.to(engine.address)
    web = BridgeClient(gateway, ProtocolType.CONNECT, json=True)
    played = play_local(native, "standard", random.Random(11), series_games=3)
    record = native.get_record(played.match_id)
    assert record.ByteSize() >= LARGE_ANSWER_BYTES
    for _ in range(2):
        assert web.get_record(played.match_id) == record
    shorter = play_local(native, "standard", random.Random(11))
    assert web.get_record(shorter.match_id) == native.get_record(shorter.match_id)
    native.channel.close()


def test_the_json_codec_keeps_large_answers_by_their_bytes() -> None:
    """The same large answer is encoded once; another, however alike, is its own; a
    small one is not kept."""
    codec = json_codec()
    record = record_pb2.GetRecordResponse(complete=True)
    for number in range(1, 1000):
        record.events.add(number=number, text=f"play R{number % 10 + 1}@{number % 9 + 1}")
    assert record.ByteSize() >= LARGE_ANSWER_BYTES
    plain = google_protobuf_json_codec().encode(record)
    assert codec.encode(record) == plain and codec.encode(record) == plain
    assert codec.kept() == (1, 1)  # (hits, answers kept)
    record.events[-1].text = "play R1@1"
    assert json.loads(codec.encode(record))["events"][-1]["text"] == "play R1@1"
    codec.encode(record_pb2.GetRecordResponse(complete=True))
    assert codec.kept() == (1, 2)


def test_watch_streams_through_grpc_web_like_native_grpc(gateway: str, engine: Engine) -> None:
    web = BridgeClient(gateway, ProtocolType.GRPC_WEB)
    played = play_local(web, "basic", random.Random(3))
    native = Client.to(engine.address)
    for token in (*played.tokens, None):  # both seats and a spectator
        over_web = list(web.watch(played.match_id, token, include_views=True))
        over_grpc = list(native.watch(played.match_id, token, include_views=True))
        assert over_web[0].HasField("snapshot")
        assert [m.SerializeToString(deterministic=True) for m in over_web] == [
            m.SerializeToString(deterministic=True) for m in over_grpc]
    native.channel.close()


def test_the_bridge_hides_what_grpc_hides(gateway: str, engine: Engine) -> None:
    """A seat's view mid-match is byte for byte the engine's projection for that seat."""
    web = BridgeClient(gateway, ProtocolType.CONNECT, json=True)
    native = Client.to(engine.address)
    created = web.create("standard", seat_options=types_pb2.SeatOptions(auto_claim=True))
    for token in (created.seat_token, created.other_seat_token, None):
        over_web, over_grpc = (client.view(created.match_id, token) for client in (web, native))
        for view in (over_web, over_grpc):
            view.ClearField("clocks")  # time left runs on between the two calls
        assert over_web == over_grpc
    first, spectator = (web.view(created.match_id, t) for t in (created.seat_token, None))
    assert len(first.hand) == 7 and not spectator.hand
    native.channel.close()


@pytest.mark.parametrize("name", PROTOCOLS)
def test_refusals_keep_their_code_message_and_reason(gateway: str, engine: Engine,
                                                     name: str) -> None:
    protocol, json = PROTOCOLS[name]
    web = BridgeClient(gateway, protocol, json)
    created = web.create("standard")
    with pytest.raises(ConnectError) as no_token:
        web.view(created.match_id, "not-a-token")
    assert no_token.value.code == Code.UNAUTHENTICATED
    legal = web.view(created.match_id, created.seat_token).legal_actions[0]
    with pytest.raises(ConnectError) as refused:
        web.submit(created.match_id, created.seat_token, 999, [legal])  # a version from nowhere
    error = refused.value
    assert error.code in (Code.ABORTED, Code.FAILED_PRECONDITION)
    infos = [error_details_pb2.ErrorInfo.FromString(detail.message_bytes)
             for detail in error.details if detail.type_name == "google.rpc.ErrorInfo"]
    assert [(info.domain, info.reason) for info in infos] == [("battleline.v1", "stale-version")]
    # The same request over native gRPC is refused with the same code and message.
    native = Client.to(engine.address)
    with pytest.raises(Exception) as direct:
        native.submit(created.match_id, created.seat_token, 999, [legal])
    assert direct.value.code().name == error.code.name  # type: ignore[attr-defined]
    assert direct.value.details() == str(error)  # type: ignore[attr-defined]
    native.channel.close()


def test_the_page_is_served_and_the_ai_rpc_is_not(gateway: str) -> None:
    with urllib.request.urlopen(gateway, timeout=10) as page:
        assert page.status == 200
        assert b"<script" in page.read()
    hidden = urllib.request.Request(gateway + "battleline.v1.AiService/Suggest", data=b"{}",
                                    headers={"content-type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(hidden, timeout=10)
    assert refused.value.code == 404


def test_shutdown_ends_watch_streams_with_unavailable(engine: Engine) -> None:
    """A stopping gateway cuts its streams with a status that says: reconnect."""
    running = GatewayThread(engine.address)
    web = BridgeClient(running.url, ProtocolType.GRPC_WEB)
    created = web.create("standard")
    stream = iter(web.watch(created.match_id, created.seat_token))
    assert next(stream).HasField("snapshot")
    stopping = threading.Thread(target=running.stop)
    stopping.start()
    with pytest.raises(ConnectError) as cut:
        next(stream)
    stopping.join(30)
    assert cut.value.code == Code.UNAVAILABLE
    assert not stopping.is_alive()


@pytest.mark.parametrize("code", [c for c in grpc.StatusCode if c is not grpc.StatusCode.OK])
def test_every_engine_status_code_reaches_the_browser_as_connects_own(
        code: grpc.StatusCode) -> None:
    """Audit finding: an engine call cancelled under load (CANCELLED, which Connect
    spells CANCELED) raised KeyError in the bridge: HTTP 500 and a logged traceback."""
    error = grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(), "gone")
    expected = "CANCELED" if code is grpc.StatusCode.CANCELLED else code.name
    assert connect_error(error).code is Code[expected]
