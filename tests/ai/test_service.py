"""The hosted AI end to end: real Redis, a real engine, real worker processes on loopback.

A random "human" plays through the client library; the AI seat is taken by
`python -m battleline_ai.worker` joining with the AI's key, played from the
seat's view, and its request acknowledged when the match is over.
"""

from __future__ import annotations

import asyncio
import contextlib
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
from battleline_ai.suggest import KEY_GUESSES, QUEUE_PER_PROCESS, AiServer
from battleline_ai.worker import AiWorker, WorkerConfig
from battleline_client.client import Client
from battleline_client.common import is_finished, is_my_turn
from battleline_engine.auth import AI_OWNER
from battleline_engine.ratelimit import Rate
from battleline_engine.storage import Storage
from battleline_engine.storage.ai import GROUP, REQUESTS_KEY
from battleline_host.local import LocalService
from battleline_rules import dump_position, new_game
from tests.ai.service_harness import (
    AI_KEY,
    WITH_AI,
    pending,
    play_random,
    start_worker,
    stop,
    wait_pending,
)
from tests.engine.harness import LoopThread
from tests.engine.test_errors import details, reason
from tests.processes import alive_after, children, command_line, descendants

FAIR_ENDS = {types_pb2.END_REASON_BREAKTHROUGH, types_pb2.END_REASON_ENVELOPMENT,
             types_pb2.END_REASON_FLANKS, types_pb2.END_REASON_DRAW,
             types_pb2.END_REASON_STALEMATE}


@pytest.fixture
def engine(redis_url: str) -> Iterator[LocalService]:
    with LocalService(redis_url, config=WITH_AI) as running:
        yield running


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
        wait_pending(store, 0)
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
            assert AI_KEY not in repr(store.xrange(REQUESTS_KEY)), "a credential in the stream"
            assert client.view(created.match_id, AI_KEY).viewer == types_pb2.SEAT_SECOND

            searchers = [child for child in children(first.pid)
                         if "spawn_main" in " ".join(command_line(child))]
            first.send_signal(signal.SIGKILL)
            first.wait(5)
            # Its search processes die with it, even one killed while it still started
            # (its worker has only just started: one stayed, idle, for good).
            assert searchers, "no search process started"
            assert not alive_after(searchers, 10)
            second = start_worker(engine.address, redis_url, log, claim_idle=2.0)
            play_random(client, [seat], rng, timeout_s=90)
            view = seat.view()
            assert is_finished(view) and view.end_reason in FAIR_ENDS, view
        wait_pending(store, 0)
        assert "reclaimed request" in log.read_text()
        # The dead worker's name left the group with its last request.
        assert len(store.xinfo_consumers(REQUESTS_KEY, GROUP)) == 1
    finally:
        stop(first)
        if second is not None:
            stop(second)
        store.close()


def test_a_reclaim_pass_keeps_what_it_took_when_forgetting_silent_workers_fails(
        redis_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A re-test: Redis 6.2 with a full store refuses the consumer deletion (OOM), which
    ended the worker's request loop and dropped the requests the pass had taken over."""
    async def main() -> list[str]:
        worker = AiWorker(WorkerConfig(engine="127.0.0.1:1", redis_url=redis_url, key="k",
                                       claim_idle_s=0.2))
        worker.storage = Storage.from_url(redis_url)
        ai = worker.storage.ai
        try:
            await ai.ensure_group()
            request_id = await ai.request("m1", 1, 3)
            assert await ai.read("dead", block_ms=1000)  # its worker dies holding it
            await asyncio.sleep(0.4)

            async def refused(*_: object) -> int:
                raise redis.ResponseError("OOM command not allowed when used memory > "
                                          "'maxmemory'.")

            monkeypatch.setattr(ai, "forget_gone", refused)
            taken = await worker._reclaim(10)
            assert await ai.held_by(worker.name) == {request_id}
            return [entry_id for entry_id, _ in taken]
        finally:
            await worker.storage.close()

    assert len(asyncio.run(main())) == 1


def test_a_holder_that_died_right_after_joining_loses_no_seat(
        engine: LocalService, redis_url: str, tmp_path: Path) -> None:
    """A holder joined the AI's seat (JoinMatch answered) and died before playing: the
    next worker joins with the same key, gets the same seat, and plays on."""
    store = redis.Redis.from_url(redis_url)
    worker: subprocess.Popen[bytes] | None = None
    try:
        with Client(engine.address) as client:
            created = client.create(opponent="ai", ai_level=3, clock="per-move",
                                    clock_seconds=60, seat="first")
            lost = client.join(match_id=created.match_id, token=AI_KEY)
            worker = start_worker(engine.address, redis_url, tmp_path / "worker.log")
            seat = client.seat(created.seat)
            play_random(client, [seat], random.Random(4), timeout_s=90)
            view = seat.view()
            assert is_finished(view) and view.end_reason in FAIR_ENDS, view
            record = client.record(seat.match_id, seat.handle.token)
            assert sum(e.seat == lost.seat for e in record.events) > 5
        wait_pending(store, 0)
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
        wait_pending(store, 0)
        assert "handed back 1 match" in log.read_text()
    finally:
        stop(first)
        if second is not None:
            stop(second)
        store.close()


KEYED = (("authorization", f"Bearer {AI_KEY}"),)  # AiService answers the AI key's holders


def _ai_env(redis_url: str) -> dict[str, str]:
    return {**os.environ, "BATTLELINE_AI_KEY": AI_KEY, "REDIS_URL": redis_url}


def test_a_worker_with_another_key_leaves_the_request_to_one_with_the_right_key(
        engine: LocalService, redis_url: str, tmp_path: Path) -> None:
    """A worker whose key the engine does not know (a misconfiguration) must not drop the
    request as hopeless: it says why and leaves it, and a worker with the right key
    takes it over and plays."""
    log = tmp_path / "workers.log"
    wrong = start_worker(engine.address, redis_url, log, claim_idle=2.0,
                         key="not-the-engines-ai-key-0123")
    right: subprocess.Popen[bytes] | None = None
    store = redis.Redis.from_url(redis_url)
    try:
        with Client(engine.address) as client:
            created = client.create(opponent="ai", ai_level=1, clock="per-move",
                                    clock_seconds=60, seat="first")
            deadline = time.monotonic() + 20
            while "BATTLELINE_AI_KEY" not in log.read_text():
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.2)
            assert pending(store) == 1, "the request was dropped"
            stop(wrong)
            right = start_worker(engine.address, redis_url, log, claim_idle=2.0)
            seat = client.seat(created.seat)
            play_random(client, [seat], random.Random(2), timeout_s=90)
            assert seat.view().end_reason in FAIR_ENDS
        wait_pending(store, 0)
    finally:
        stop(wrong)
        if right is not None:
            stop(right)
        store.close()


@pytest.fixture
def ai_service(redis_url: str, engine: LocalService) -> Iterator[tuple[str, int]]:
    """`battleline ai --workers 0 --port 0`: the Suggest RPC alone (address, pid)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "battleline_client.cli", "ai", "--workers", "0", "--port", "0",
         "--engine", engine.address],
        stdout=subprocess.PIPE, text=True, env=_ai_env(redis_url))
    assert process.stdout is not None
    line = process.stdout.readline()
    assert "listening on" in line, line
    try:
        yield line.split()[-1], process.pid
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(15)


def test_suggest_returns_a_legal_action_with_statistics(ai_service: tuple[str, int],
                                                        engine: LocalService) -> None:
    with Client(engine.address) as client, grpc.insecure_channel(ai_service[0]) as channel:
        created = client.create(opponent="local", clock="none", seed=11)
        assert created.other is not None
        seats = [client.seat(created.seat), client.seat(created.other)]
        view = next(v for s in seats if is_my_turn(v := s.view()))
        stub = ai_pb2_grpc.AiServiceStub(channel)
        reply = stub.Suggest(ai_pb2.SuggestRequest(view=view, bot="ismcts:level=5",
                                                   iterations=60, budget_ms=3000, seed=1),
                             timeout=30, metadata=KEYED)
        assert reply.action in view.legal_actions
        # Level 5 searches only the plays its ranking scores alike (else 0 iterations).
        assert 0 <= reply.iterations <= 60 and 0.0 <= reply.win_estimate <= 1.0
        assert reply.top_actions and reply.top_actions[0].action in view.legal_actions
        assert sum(a.visits for a in reply.top_actions) <= reply.iterations
        by_text = stub.Suggest(ai_pb2.SuggestRequest(position=view.position, bot="heuristic"),
                               timeout=30, metadata=KEYED)
        assert by_text.action in view.legal_actions
        with pytest.raises(grpc.RpcError) as bad:
            stub.Suggest(ai_pb2.SuggestRequest(position="not a position"), timeout=30,
                         metadata=KEYED)
        assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        with pytest.raises(grpc.RpcError) as too_much:
            stub.Suggest(ai_pb2.SuggestRequest(view=view, budget_ms=10**6), timeout=30,
                         metadata=KEYED)
        assert too_much.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def test_suggest_answers_key_holders_only_and_refuses_oversize_first(
        ai_service: tuple[str, int]) -> None:
    """Finding 8: Suggest without the AI's key is UNAUTHENTICATED; a short position that
    asks for 50 million cards is INVALID_ARGUMENT at once, before anything is built; a
    request over 256 KiB is RESOURCE_EXHAUSTED before it is decoded, and bytes that are not
    a request INVALID_ARGUMENT (they were UNKNOWN, with a logged traceback)."""
    address, pid = ai_service
    position = (Path(__file__).parents[2] / "examples" / "positions"
                / "standard-fog-mud-leader-view.txt").read_text()
    huge = position.replace("deck troop: ?troop*19", "deck troop: ?troop*50000000")
    assert len(huge) < 1000 and huge != position
    with grpc.insecure_channel(address) as channel:
        stub = ai_pb2_grpc.AiServiceStub(channel)
        for request in (ai_pb2.SuggestRequest(position=position, bot="heuristic"),
                        ai_pb2.SuggestRequest(position=huge)):
            with pytest.raises(grpc.RpcError) as anonymous:
                stub.Suggest(request, timeout=30)
            assert anonymous.value.code() == grpc.StatusCode.UNAUTHENTICATED
        start = time.monotonic()
        with pytest.raises(grpc.RpcError) as oversize:
            stub.Suggest(ai_pb2.SuggestRequest(position=huge, budget_ms=100), timeout=30,
                         metadata=KEYED)
        assert oversize.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert time.monotonic() - start < 2
        # A megabyte that gzip sends in a few KB is refused by size, key or not (the
        # default limit, 4 MB, decoded it first).
        with pytest.raises(grpc.RpcError) as bomb:
            stub.Suggest(ai_pb2.SuggestRequest(position="x" * 1_000_000), timeout=30,
                         compression=grpc.Compression.Gzip)
        assert bomb.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        garbage = channel.unary_unary("/battleline.v1.AiService/Suggest")
        with pytest.raises(grpc.RpcError) as undecodable:
            garbage(b"\xff\xff\xff", timeout=30)
        assert undecodable.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        for process in (pid, *descendants(pid)):
            assert _rss_mb(process) < 300, f"process {process} grew to {_rss_mb(process)} MB"
        assert stub.Suggest(ai_pb2.SuggestRequest(position=position, bot="heuristic"),
                            timeout=30, metadata=KEYED).action


def test_battleline_ai_restarts_a_killed_worker_which_takes_the_match_over(
        engine: LocalService, redis_url: str, tmp_path: Path) -> None:
    log = tmp_path / "ai.log"
    with log.open("ab") as out:
        service = subprocess.Popen(
            [sys.executable, "-m", "battleline_client.cli", "ai", "--engine", engine.address,
             "--claim-idle", "2", "--move-cap", "0.3"],
            stdout=out, stderr=subprocess.STDOUT, env=_ai_env(redis_url))
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
        assert "ai worker 0 exited: starting it again" in text and "reclaimed request" in text, text
    finally:
        stop(service)


@contextlib.contextmanager
def _ai_service(key_guesses: Rate = KEY_GUESSES) -> Iterator[ai_pb2_grpc.AiServiceStub]:
    """An AI service on loopback (its own loop thread and search process) and a stub to
    it, stopped afterwards."""
    loop = LoopThread()
    server = AiServer("127.0.0.1:0", AI_KEY, key_guesses=key_guesses)
    try:
        address = loop.call(server.start())
        with grpc.insecure_channel(address) as channel:
            yield ai_pb2_grpc.AiServiceStub(channel)
    finally:
        loop.call(server.stop())
        loop.end()


def test_wrong_ai_keys_are_refused_once_an_address_spent_its_guesses() -> None:
    """Tries at the AI's key are rate-limited per address, and an address that spent its
    guesses is refused before its key is compared: a right guess then tells it nothing."""
    with _ai_service(key_guesses=Rate(per_s=0.001, burst=3)) as stub:
        request = ai_pb2.ReviewRequest(ruleset="standard", actions=["not-an-action"])

        def code(key: str) -> grpc.StatusCode:
            try:
                stub.Review(request, metadata=[("authorization", f"Bearer {key}")],
                            timeout=30)
                return grpc.StatusCode.OK
            except grpc.RpcError as error:
                return error.code()  # type: ignore[attr-defined, no-any-return]

        assert code(AI_KEY) == grpc.StatusCode.INVALID_ARGUMENT  # past the key: refunded
        assert [code(f"guess-{n}-of-the-ai-key") for n in range(5)] == (
            [grpc.StatusCode.UNAUTHENTICATED] * 3 + [grpc.StatusCode.RESOURCE_EXHAUSTED] * 2)
        assert code(AI_KEY) == grpc.StatusCode.RESOURCE_EXHAUSTED


def test_the_ai_service_replaces_a_search_process_that_died() -> None:
    """Sixth audit: like the worker's, the AI service's pool broke for good when one of
    its processes died, and every later hint and review failed. Now the call that finds
    it broken is refused UNAVAILABLE (retry) and the next one is searched."""
    before = set(children(os.getpid()))
    with _ai_service() as stub:
        view = new_game("standard", seed=5).view(0)
        request = ai_pb2.SuggestRequest(position=dump_position(view), bot="heuristic")
        metadata = [("authorization", f"Bearer {AI_KEY}")]
        assert stub.Suggest(request, metadata=metadata, timeout=60).action
        searchers = {pid for pid in set(children(os.getpid())) - before
                     if "spawn_main" in " ".join(command_line(pid))}  # not its tracker
        assert searchers
        for pid in searchers:
            os.kill(pid, signal.SIGKILL)
        codes = []
        for _ in range(3):
            try:
                codes.append(stub.Suggest(request, metadata=metadata, timeout=60).action)
            except grpc.RpcError as error:
                codes.append(error.code())  # type: ignore[attr-defined]
    assert set(codes) - {grpc.StatusCode.UNAVAILABLE}, codes  # searched again
    assert all(isinstance(c, str) for c in codes[codes.count(grpc.StatusCode.UNAVAILABLE):])


def test_the_ai_service_serves_the_client_served_least_recently_first() -> None:
    """Sixth audit: six addresses asking hints all the time had another client's hints
    refused half the time; the queue was first come, first served. Now the engine names
    the client (`AI_OWNER`), and a process that comes free goes to the client served
    least recently: b's search, asked last, starts before a's second."""
    position = dump_position(new_game("standard", seed=6).view(0))
    finished: list[str] = []
    with _ai_service() as stub:

        def ask(owner: str, budget_ms: int) -> grpc.Future:
            future = stub.Suggest.future(
                ai_pb2.SuggestRequest(position=position, bot="ismcts:iterations=none",
                                      budget_ms=budget_ms),
                metadata=[("authorization", f"Bearer {AI_KEY}"), (AI_OWNER, owner)],
                timeout=60)
            future.add_done_callback(lambda _f: finished.append(f"{owner}:{budget_ms}"))
            return future

        assert stub.Suggest(ai_pb2.SuggestRequest(position=position, bot="heuristic"),
                            metadata=[("authorization", f"Bearer {AI_KEY}")],
                            timeout=60).action  # the search process is up
        calls = [ask("a", 1500)]
        time.sleep(0.3)
        calls.append(ask("a", 1000))
        time.sleep(0.1)
        calls.append(ask("b", 300))
        assert all(call.result().action for call in calls)
    assert finished == ["a:1500", "b:300", "a:1000"]


def test_a_full_queue_makes_room_for_a_client_holding_less() -> None:
    """Ninth audit: each client may hold 2 places of the AI service's queue (then 16 per
    search process), so 8 addresses asking all the time filled it and every other client's hints
    and reviews were refused. Now a client that holds fewer places than another takes the
    newest waiting place of the one holding most (that call is refused `ai-busy`); one
    holding as few as everyone else is still refused."""
    position = dump_position(new_game("standard", seed=7).view(0))
    with _ai_service() as stub:

        def ask(owner: str, budget_ms: int = 3000) -> grpc.Future:
            return stub.Suggest.future(
                ai_pb2.SuggestRequest(position=position, bot="ismcts:iterations=none",
                                      budget_ms=budget_ms),
                metadata=[("authorization", f"Bearer {AI_KEY}"), (AI_OWNER, owner)],
                timeout=60)

        def refused(call: grpc.Future) -> bool:
            return call.done() and call.code() == grpc.StatusCode.RESOURCE_EXHAUSTED

        assert stub.Suggest(ai_pb2.SuggestRequest(position=position, bot="heuristic"),
                            metadata=[("authorization", f"Bearer {AI_KEY}")],
                            timeout=60).action  # the search process is up
        # Every place taken: one client with 2, the others with one each; one search runs.
        owners = ["two", "two"] + [f"one-{n}" for n in range(QUEUE_PER_PROCESS - 2)]
        held = [ask(owner) for owner in owners]
        time.sleep(1.0)
        assert not any(call.done() for call in held)
        newcomer = ask("newcomer")
        time.sleep(1.0)
        gave_way = [owner for owner, call in zip(owners, held, strict=True)
                    if refused(call)]
        assert gave_way == ["two"] and not newcomer.done()
        # Now every client holds one place: one more is refused, as it would be.
        late = ask("late")
        assert late.exception(timeout=10) is not None and refused(late)
        assert sum(refused(call) for call in held) == 1


def test_a_search_whose_caller_cancelled_keeps_its_places_until_it_ends() -> None:
    """Twenty-third audit, left then: a hint whose caller cancelled let its seat's and its
    client's places in the queue go while its search ran on in its process, so asking
    again queued a second search beside it (and a client more than its 2). Now they are
    held until that search ends: the seat asked again is refused `seat-busy` (its retry
    delay the time that search has left), the client's third search `ai-busy`, and both
    are searched once it has ended."""
    position = dump_position(new_game("standard", seed=8).view(0))
    with _ai_service() as stub:

        def ask(match_id: str, budget_ms: int = 2500) -> grpc.Future:
            view = types_pb2.MatchView(match_id=match_id, viewer=types_pb2.SEAT_FIRST,
                                       position=position)
            return stub.Suggest.future(
                ai_pb2.SuggestRequest(view=view, bot="ismcts:iterations=none",
                                      budget_ms=budget_ms),
                metadata=[("authorization", f"Bearer {AI_KEY}"), (AI_OWNER, "a")],
                timeout=60)

        def refusal(call: grpc.Future) -> str:
            error = call.exception(timeout=10)
            assert error is not None and error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            return reason(error)

        assert ask("warm-up", 100).result().action  # the search process is up
        cancelled = ask("m1")
        time.sleep(0.5)  # its search is running
        assert cancelled.cancel()
        time.sleep(0.2)
        again = ask("m1", 100)
        assert refusal(again) == "seat-busy"
        # Its retry delay is what the cancelled search has left, not the new one's 0.1 s.
        left_s = details(again.exception())["RetryInfo"].retry_delay.ToNanoseconds() / 1e9
        assert 1.0 < left_s <= 2.5, left_s
        waiting = ask("m2", 100)  # the client's second place: waits for the process
        time.sleep(0.2)
        third = ask("m3", 100)
        assert refusal(third) == "ai-busy"
        # Its own count only: nothing of how many searches other clients have going.
        assert third.exception().details() == (
            "this client has 2 searches running or waiting, the most it may: retry when "
            "one has ended")
        assert waiting.result().action  # searched once the cancelled search ended
        assert ask("m1", 100).result().action and ask("m3", 100).result().action


def test_ctrl_c_stops_a_worker_and_its_search_processes_without_a_traceback(
        engine: LocalService, redis_url: str, tmp_path: Path) -> None:
    """The terminal sends SIGINT to the whole process group: each search process printed
    a KeyboardInterrupt traceback while the worker stopped them anyway (a re-test)."""
    log = tmp_path / "worker.log"
    with log.open("ab") as out:
        worker = subprocess.Popen(
            [sys.executable, "-m", "battleline_ai.worker", "--engine", engine.address,
             "--think", "0", "--move-cap", "0.3"], stdout=out, stderr=subprocess.STDOUT,
            env={**os.environ, "BATTLELINE_AI_KEY": AI_KEY, "REDIS_URL": redis_url},
            process_group=0)
    try:
        with Client(engine.address) as client:
            client.create(opponent="ai", ai_level=5, seat="second")  # the AI searches first
            deadline = time.monotonic() + 60
            while not any("multiprocessing" in " ".join(command_line(pid))
                          for pid in descendants(worker.pid)):
                assert time.monotonic() < deadline, "no search process started"
                time.sleep(0.1)
        time.sleep(1)  # its imports done
        os.killpg(worker.pid, signal.SIGINT)
        assert worker.wait(30) is not None
    finally:
        stop(worker)
    assert "Traceback" not in log.read_text(), log.read_text()
