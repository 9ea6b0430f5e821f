"""What an AI match holds of a worker: an AI worker that comes after the engine cancelled
a match (no worker took it in time) drops that request for good, and a worker lets go of
a match whose human thinks long (parks it) and plays it again once the human moves."""

from __future__ import annotations

import random
import time
from dataclasses import replace
from pathlib import Path

import redis

from battleline.v1 import types_pb2
from battleline_client.bots import choose
from battleline_client.client import Client
from battleline_client.common import is_my_turn
from battleline_host.local import LocalService
from tests.ai.service_harness import (
    WITH_AI,
    pending,
    start_worker,
    stop,
    wait_pending,
    wait_phase,
)


def test_a_late_worker_drops_a_cancelled_match_and_serves_the_next(redis_url: str,
                                                                    tmp_path: Path) -> None:
    store = redis.Redis.from_url(redis_url)
    log = tmp_path / "worker.log"
    with LocalService(redis_url, config=replace(WITH_AI, ai_join_ms=2000)) as engine, \
            Client(engine.address) as client:
        early = client.create(opponent="ai", ai_level=1)
        assert wait_phase(client, early.match_id, types_pb2.MATCH_PHASE_FINISHED, 10)
        assert client.view(early.match_id).end_reason == types_pb2.END_REASON_CANCELLED
        worker = start_worker(engine.address, redis_url, log)
        try:
            # The later match once the worker reads requests: its start (an interpreter,
            # imports) may take longer than a match waits for an AI on a loaded machine.
            deadline = time.monotonic() + 30
            while "ai worker" not in log.read_text() and time.monotonic() < deadline:
                time.sleep(0.1)
            later = client.create(opponent="ai", ai_level=1)
            assert wait_phase(client, later.match_id, types_pb2.MATCH_PHASE_PLAYING, 30)
            # The worker may read both requests at once and join the later match before
            # it drops the cancelled one: wait for that drop's acknowledgement.
            wait_pending(store, 1)
        finally:
            stop(worker)
    assert "dropped" in log.read_text()
    store.close()


def test_a_worker_parks_a_match_whose_human_thinks_and_plays_it_when_the_human_moves(
        redis_url: str, tmp_path: Path) -> None:
    store = redis.Redis.from_url(redis_url)
    log = tmp_path / "worker.log"
    with LocalService(redis_url, config=WITH_AI) as engine, Client(engine.address) as client:
        worker = start_worker(engine.address, redis_url, log, park_after=1.0)
        try:
            created = client.create(opponent="ai", ai_level=4)
            seat = client.seat(created.seat)
            deadline = time.monotonic() + 30
            while not (is_my_turn(seat.view()) and "parked" in log.read_text()):
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.2)
            assert pending(store) == 0  # the worker holds nothing for it
            rng = random.Random(2)
            for _ in range(3):  # each human turn wakes the AI, which answers it
                view = seat.view()
                while is_my_turn(view):
                    seat.act(*choose(view, rng))
                    view = seat.view()
                deadline = time.monotonic() + 30
                while not is_my_turn(view):
                    assert time.monotonic() < deadline, log.read_text()
                    time.sleep(0.1)
                    view = seat.view()
                time.sleep(1.5)  # long enough to be parked again
        finally:
            stop(worker)
    assert log.read_text().count("parked until its human moves") >= 3
    store.close()
