"""The hosted AI end to end: real Redis, a real engine, real worker processes on loopback.

A random "human" plays through the client library; the AI seat is taken by
`python -m battleline_ai.worker` through the join-ticket path, played from the
seat's view, and its request acknowledged when the match is over.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
import redis

from battleline.v1 import ai_pb2, ai_pb2_grpc, types_pb2
from battleline_ai.vault import Sealer, vault_key
from battleline_client.client import Client
from battleline_client.common import is_finished, is_my_turn
from battleline_client.local import LocalService
from tests.ai.service_harness import SECRET, play_random, start_worker, stop
from tests.engine.conftest import redis_server, redis_url

__all__ = ["redis_server", "redis_url"]

STREAM, GROUP = "bl:ai:requests", "ai-workers"
FAIR_ENDS = {types_pb2.END_REASON_BREAKTHROUGH, types_pb2.END_REASON_ENVELOPMENT,
             types_pb2.END_REASON_FLANKS, types_pb2.END_REASON_DRAW,
             types_pb2.END_REASON_STALEMATE}


@pytest.fixture
def engine(redis_url: str) -> Iterator[LocalService]:
    with LocalService(redis_url) as running:
        yield running


def _pending(store: redis.Redis) -> int:
    return int(store.xpending(STREAM, GROUP)["pending"])


def _wait_acked(store: redis.Redis, timeout_s: float = 10) -> None:
    deadline = time.monotonic() + timeout_s
    while _pending(store) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _pending(store) == 0, "the worker did not acknowledge the finished matches"


def test_ai_plays_complete_matches_in_every_ruleset(engine: LocalService, redis_url: str,
                                                    tmp_path: Path) -> None:
    log = tmp_path / "worker.log"
    worker = start_worker(engine.address, redis_url, log)
    store = redis.Redis.from_url(redis_url)
    try:
        with Client(engine.address) as client:
            plan = [("standard", 5), ("basic", 4), ("deck52", 3)]
            created = [client.create(opponent="ai", ai_level=level, ruleset=ruleset,
                                     clock="per-move", clock_seconds=20, seat=seat)
                       for (ruleset, level), seat in zip(plan, ("first", "second", "first"),
                                                         strict=True)]
            seats = [client.seat(c.seat) for c in created]
            play_random(client, seats, random.Random(5), timeout_s=150)
            for (ruleset, _level), seat in zip(plan, seats, strict=True):
                view = seat.view()
                assert is_finished(view) and view.end_reason in FAIR_ENDS, (ruleset, view)
                record = client.record(seat.match_id, seat.handle.token)
                ai_seat = types_pb2.SEAT_SECOND if seat.handle.seat == types_pb2.SEAT_FIRST \
                    else types_pb2.SEAT_FIRST
                ai_info = next(p for p in view.players if p.seat == ai_seat)
                assert ai_info.display_name.startswith("AI level")
                assert sum(e.seat == ai_seat for e in record.events) > 5, ruleset
        _wait_acked(store)
        for c in created:
            assert not store.exists(vault_key(c.match_id)), "sealed token left behind"
    finally:
        stop(worker)
        store.close()
    assert worker.returncode == 0, log.read_text()


def test_a_killed_worker_is_replaced_and_the_match_finishes(engine: LocalService,
                                                            redis_url: str,
                                                            tmp_path: Path) -> None:
    log = tmp_path / "workers.log"
    first = start_worker(engine.address, redis_url, log, claim_idle=2.0)
    second: subprocess.Popen[bytes] | None = None
    store = redis.Redis.from_url(redis_url)
    rng = random.Random(9)
    try:
        with Client(engine.address) as client:
            created = client.create(opponent="ai", ai_level=3, clock="per-move",
                                    clock_seconds=60, seat="first")
            seat = client.seat(created.seat)
            play_random(client, [seat], rng, until=4, timeout_s=60)  # the AI answered 3 times
            sealed = store.hget(vault_key(created.match_id), "token")
            assert sealed is not None, "the worker keeps the seat token only sealed"
            token = Sealer(SECRET.encode()).open(created.match_id, sealed.decode())
            public = repr(store.xrange(STREAM)) + sealed.decode()
            assert token not in public, "a seat token in plain text"
            assert client.view(created.match_id, token).viewer == types_pb2.SEAT_SECOND

            first.send_signal(signal.SIGKILL)
            first.wait(5)
            second = start_worker(engine.address, redis_url, log, claim_idle=2.0)
            play_random(client, [seat], rng, timeout_s=90)
            view = seat.view()
            assert is_finished(view) and view.end_reason in FAIR_ENDS, view
        _wait_acked(store)
        assert "reclaimed request" in log.read_text()
    finally:
        stop(first)
        if second is not None:
            stop(second)
        store.close()


def test_a_holder_that_died_before_sealing_the_token_loses_no_seat(
        engine: LocalService, redis_url: str, tmp_path: Path) -> None:
    """The seat request's ticket was redeemed (JoinMatch answered) but the token never
    reached the vault: the next worker redeems the ticket again and plays on."""
    store = redis.Redis.from_url(redis_url)
    worker: subprocess.Popen[bytes] | None = None
    try:
        with Client(engine.address) as client:
            created = client.create(opponent="ai", ai_level=3, clock="per-move",
                                    clock_seconds=60, seat="first")
            fields = {k.decode(): v.decode() for k, v in store.xrange(STREAM)[-1][1].items()}
            lost = client.join(match_id=created.match_id, join_ticket=fields["ticket"])
            assert not store.exists(vault_key(created.match_id))  # died before sealing
            worker = start_worker(engine.address, redis_url, tmp_path / "worker.log")
            seat = client.seat(created.seat)
            play_random(client, [seat], random.Random(4), timeout_s=90)
            view = seat.view()
            assert is_finished(view) and view.end_reason in FAIR_ENDS, view
            record = client.record(seat.match_id, seat.handle.token)
            assert sum(e.seat == lost.seat for e in record.events) > 5
        _wait_acked(store)
    finally:
        if worker is not None:
            stop(worker)
        store.close()


def test_a_stopped_worker_hands_its_matches_over_at_once(engine: LocalService, redis_url: str,
                                                         tmp_path: Path) -> None:
    log = tmp_path / "workers.log"
    first = start_worker(engine.address, redis_url, log, claim_idle=60.0)
    second: subprocess.Popen[bytes] | None = None
    store = redis.Redis.from_url(redis_url)
    rng = random.Random(12)
    try:
        with Client(engine.address) as client:
            created = client.create(opponent="ai", ai_level=3, clock="per-move",
                                    clock_seconds=60, seat="first")
            seat = client.seat(created.seat)
            play_random(client, [seat], rng, until=3, timeout_s=60)
            stop(first)  # SIGTERM: a rolling restart, say
            second = start_worker(engine.address, redis_url, log, claim_idle=60.0)
            play_random(client, [seat], rng, timeout_s=40)  # far less than claim_idle
            assert is_finished(seat.view())
        _wait_acked(store)
        assert "handed back 1 match" in log.read_text()
    finally:
        stop(first)
        if second is not None:
            stop(second)
        store.close()


@pytest.fixture
def ai_service(redis_url: str, engine: LocalService) -> Iterator[str]:
    """`battleline ai --workers 0 --port 0`: the Suggest RPC alone."""
    process = subprocess.Popen(
        [sys.executable, "-m", "battleline_client.cli", "ai", "--workers", "0", "--port", "0",
         "--engine", engine.address, "--redis-url", redis_url],
        stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    line = process.stdout.readline()
    assert "listening on" in line, line
    try:
        yield line.split()[-1]
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(15)


def test_suggest_returns_a_legal_action_with_statistics(ai_service: str,
                                                        engine: LocalService) -> None:
    with Client(engine.address) as client, grpc.insecure_channel(ai_service) as channel:
        created = client.create(opponent="local", clock="none", seed=11)
        assert created.other is not None
        seats = [client.seat(created.seat), client.seat(created.other)]
        view = next(v for s in seats if is_my_turn(v := s.view()))
        stub = ai_pb2_grpc.AiServiceStub(channel)
        reply = stub.Suggest(ai_pb2.SuggestRequest(view=view, bot="ismcts:level=5",
                                                   iterations=60, budget_ms=3000, seed=1),
                             timeout=30)
        assert reply.action in view.legal_actions
        assert 0 < reply.iterations <= 60 and 0.0 <= reply.win_estimate <= 1.0
        assert reply.top_actions and reply.top_actions[0].action in view.legal_actions
        assert sum(a.visits for a in reply.top_actions) <= reply.iterations
        by_text = stub.Suggest(ai_pb2.SuggestRequest(position=view.position, bot="heuristic"),
                               timeout=30)
        assert by_text.action in view.legal_actions
        with pytest.raises(grpc.RpcError) as bad:
            stub.Suggest(ai_pb2.SuggestRequest(position="not a position"), timeout=30)
        assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        with pytest.raises(grpc.RpcError) as too_much:
            stub.Suggest(ai_pb2.SuggestRequest(view=view, budget_ms=10**6), timeout=30)
        assert too_much.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED


def test_sealed_tokens_open_only_with_the_secret_and_for_their_match() -> None:
    sealer = Sealer(b"one secret of enough length")
    sealed = sealer.seal("m1", "seat-token-xyz")
    assert "seat-token-xyz" not in sealed
    assert sealer.open("m1", sealed) == "seat-token-xyz"
    with pytest.raises(ValueError):
        sealer.open("m2", sealed)
    with pytest.raises(ValueError):
        Sealer(b"another secret, long enough").open("m1", sealed)


def test_battleline_ai_restarts_a_killed_worker_which_takes_the_match_over(
        engine: LocalService, redis_url: str, tmp_path: Path) -> None:
    log = tmp_path / "ai.log"
    with log.open("ab") as out:
        service = subprocess.Popen(
            [sys.executable, "-m", "battleline_client.cli", "ai", "--engine", engine.address,
             "--redis-url", redis_url, "--claim-idle", "2", "--move-cap", "0.3"],
            stdout=out, stderr=subprocess.STDOUT)
    rng = random.Random(21)
    try:
        with Client(engine.address) as client:
            created = client.create(opponent="ai", ai_level=4, clock="per-move",
                                    clock_seconds=60, seat="first")
            seat = client.seat(created.seat)
            play_random(client, [seat], rng, until=3, timeout_s=60)
            children = Path(f"/proc/{service.pid}/task/{service.pid}/children").read_text()
            worker = int(children.split()[0])
            os.kill(worker, signal.SIGKILL)
            play_random(client, [seat], rng, timeout_s=90)
            view = seat.view()
            assert is_finished(view) and view.end_reason in FAIR_ENDS, view
        text = log.read_text()
        assert "restarting" in text and "reclaimed request" in text, text
    finally:
        stop(service)
