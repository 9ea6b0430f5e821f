"""GameService.GetHint through a real engine and a real `battleline ai --port` process:
the seat's owner gets a legal action; spectators, the other seat, other matches' tokens
and matches between two people get nothing."""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from battleline.v1 import game_pb2, game_pb2_grpc
from battleline_client.aio import AsyncClient
from battleline_client.client import Client
from battleline_client.common import SeatHandle, is_my_turn
from battleline_engine.ratelimit import Rate
from battleline_host.local import LocalService
from tests.ai.service_harness import WITH_AI


def _hint(address: str, match_id: str, token: str | None,
          budget_ms: int = 300) -> game_pb2.GetHintResponse:
    with grpc.insecure_channel(address) as channel:
        metadata = (("authorization", f"Bearer {token}"),) if token else ()
        return game_pb2_grpc.GameServiceStub(channel).GetHint(
            game_pb2.GetHintRequest(match_id=match_id, budget_ms=budget_ms),
            metadata=metadata, timeout=30)


def _code(call: object) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as err:
        call()  # type: ignore[operator]
    return err.value.code(), err.value.details()


def test_hints_for_the_seat_to_act_in_a_local_match(ai_engine: LocalService) -> None:
    with Client(ai_engine.address) as client:
        created = client.create(opponent="local", clock="none", seed=5)
        assert created.other is not None
        handles = [created.seat, created.other]
        views = [client.view(created.match_id, h.token) for h in handles]
        mover = 0 if is_my_turn(views[0]) else 1
        reply = client.seat(handles[mover]).hint(budget_ms=300)  # the library's helper
        assert reply.version == views[mover].version
        assert reply.suggestion.action in views[mover].legal_actions
        assert reply.suggestion.bot.startswith("ismcts")

        async def async_hint() -> game_pb2.GetHintResponse:
            async with AsyncClient(ai_engine.address) as aio:
                return await aio.seat(handles[mover]).hint(budget_ms=300)

        assert asyncio.run(async_hint()).suggestion.action in views[mover].legal_actions
        waiting = handles[1 - mover].token
        assert _code(lambda: _hint(ai_engine.address, created.match_id, waiting))[0] \
            == grpc.StatusCode.FAILED_PRECONDITION
        assert _code(lambda: _hint(ai_engine.address, created.match_id, None))[0] \
            == grpc.StatusCode.UNAUTHENTICATED
        other = client.create(opponent="local", clock="none")
        assert _code(lambda: _hint(ai_engine.address, created.match_id, other.seat.token))[0] \
            == grpc.StatusCode.PERMISSION_DENIED
        client.seat(handles[mover]).resign()  # fourteenth audit: it said "not-your-turn"
        code, details = _code(lambda: _hint(ai_engine.address, created.match_id,
                                            handles[mover].token))
        assert code == grpc.StatusCode.FAILED_PRECONDITION and "the match is over" in details


def test_no_hints_between_two_people(ai_engine: LocalService) -> None:
    with Client(ai_engine.address) as client:
        created = client.create(opponent="open", private=True, clock="per-move",
                                clock_seconds=60)
        joined = client.join(invite_code=created.invite_code, name="friend")
        for handle in (created.seat, joined):
            code, details = _code(lambda h=handle: _hint(ai_engine.address, created.match_id,
                                                         h.token))
            assert code == grpc.StatusCode.PERMISSION_DENIED and "two people" in details


def test_one_seats_hint_burst_does_not_starve_another_seats_hint(ai_engine: LocalService) -> None:
    """Finding 8: four concurrent 5-second hints for one seat (the AI service has one
    search process) used to queue up and make another player's hint time out
    (UNAVAILABLE). One search per seat at a time: the extra three are refused at once
    (RESOURCE_EXHAUSTED) and the other seat's hint is answered."""
    with Client(ai_engine.address) as client:
        movers = []
        for _ in range(2):
            created = client.create(opponent="local", clock="none")
            assert created.other is not None
            handles = [created.seat, created.other]
            views = [client.view(created.match_id, h.token) for h in handles]
            movers.append(handles[0 if is_my_turn(views[0]) else 1])
        hog, other = movers

        def ask(handle: SeatHandle, budget_ms: int) -> grpc.StatusCode:
            try:
                with grpc.insecure_channel(ai_engine.address) as channel:
                    game_pb2_grpc.GameServiceStub(channel).GetHint(
                        game_pb2.GetHintRequest(match_id=handle.match_id, budget_ms=budget_ms),
                        metadata=(("authorization", f"Bearer {handle.token}"),), timeout=60)
                return grpc.StatusCode.OK
            except grpc.RpcError as err:
                return err.code()

        with ThreadPoolExecutor(5) as pool:
            burst = [pool.submit(ask, hog, 5000) for _ in range(4)]
            time.sleep(0.3)  # the burst first
            start = time.monotonic()
            answered = ask(other, 300)
            waited = time.monotonic() - start
            codes = sorted(f.result().name for f in burst)
    assert answered == grpc.StatusCode.OK, answered
    assert waited < 8, waited  # behind one 5-second search at most, not four
    assert codes == ["OK", "RESOURCE_EXHAUSTED", "RESOURCE_EXHAUSTED", "RESOURCE_EXHAUSTED"]


def test_the_ai_service_reports_its_health(ai_engine: LocalService) -> None:
    """A deployment's readiness probe asks the AI service's gRPC health (deploy/k8s's AI
    pods serve hints and reviews to the engines); it answers SERVING, for AiService too."""
    with grpc.insecure_channel(ai_engine.config.ai_address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        for service in ("", "battleline.v1.AiService"):
            reply = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=10)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING, service


def test_one_clients_many_seats_share_one_budget_of_hint_seconds(
        redis_url: str, ai_service: str) -> None:
    """One search per seat at a time does not stop a client holding many seats (LOCAL
    matches cost nothing) from keeping the AI's queue to itself: a client address spends
    search seconds from one bucket, whichever seat asks, and past it is refused
    RESOURCE_EXHAUSTED with when to retry."""
    config = replace(WITH_AI, ai_address=ai_service, hint_rate=Rate(per_s=0.01, burst=1.5))
    with LocalService(redis_url, config=config) as engine, Client(engine.address) as client:
        movers = []
        for seed in (6, 7):
            created = client.create(opponent="local", clock="none", seed=seed)
            assert created.other is not None
            handles = [created.seat, created.other]
            views = [client.view(created.match_id, h.token) for h in handles]
            movers.append(handles[0 if is_my_turn(views[0]) else 1])
        assert client.seat(movers[0]).hint(budget_ms=1000).suggestion.action
        other = movers[1]
        code, details = _code(lambda: _hint(engine.address, other.match_id, other.token, 1000))
        assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and "seconds of hints" in details
        assert _hint(engine.address, other.match_id, other.token).suggestion.action  # the rest
        # About 0.2 s is left. However small the budget asked, a hint costs the AI service
        # a search process's turn: it is charged 0.1 s at least, so a few pass, not 200.
        tiny: list[grpc.StatusCode] = []
        for _ in range(6):
            try:
                _hint(engine.address, other.match_id, other.token, budget_ms=1)
                tiny.append(grpc.StatusCode.OK)
            except grpc.RpcError as err:
                tiny.append(err.code())
        assert tiny.count(grpc.StatusCode.OK) <= 3, tiny
        assert grpc.StatusCode.RESOURCE_EXHAUSTED in tiny, tiny



def test_a_hint_the_ai_had_no_room_for_costs_no_hint_seconds(
        redis_url: str, ai_service: str) -> None:
    """Twenty-third audit: hints the AI service refused at once (another search of the
    seat running) were charged like searched ones. Four half-second hints sent at once
    for one seat: one is searched and charged, three are refused and charged nothing, so
    a 2 s hint still fits the 3 s budget afterwards (without the refunds 1 s was left)."""
    config = replace(WITH_AI, ai_address=ai_service, hint_rate=Rate(per_s=0.001, burst=3))
    with LocalService(redis_url, config=config) as engine, Client(engine.address) as client:
        created = client.create(opponent="local", clock="none", seed=8)
        assert created.other is not None
        handles = [created.seat, created.other]
        mover = handles[0 if is_my_turn(client.view(created.match_id, handles[0].token)) else 1]

        def ask(budget_ms: int) -> grpc.StatusCode:
            try:
                _hint(engine.address, mover.match_id, mover.token, budget_ms)
                return grpc.StatusCode.OK
            except grpc.RpcError as err:
                return err.code()

        with ThreadPoolExecutor(4) as pool:
            codes = sorted(code.name for code in pool.map(ask, [500] * 4))
        assert codes == ["OK", "RESOURCE_EXHAUSTED", "RESOURCE_EXHAUSTED", "RESOURCE_EXHAUSTED"]
        assert ask(2000) == grpc.StatusCode.OK
