"""An AI worker that comes after the engine cancelled a match (no worker took it in time)
drops that request for good and serves the next one."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import redis

from battleline.v1 import types_pb2
from battleline_client.client import Client
from battleline_engine.storage.ai import GROUP, REQUESTS_KEY
from battleline_host.local import LocalService
from tests.ai.service_harness import WITH_AI, start_worker, stop


def _phase_within(client: Client, match_id: str, timeout_s: float) -> int:
    """The match's phase once it left WAITING (or WAITING after `timeout_s`)."""
    deadline = time.monotonic() + timeout_s
    phase = client.view(match_id).phase
    while phase == types_pb2.MATCH_PHASE_WAITING and time.monotonic() < deadline:
        time.sleep(0.1)
        phase = client.view(match_id).phase
    return phase


def test_a_late_worker_drops_a_cancelled_match_and_serves_the_next(redis_url: str,
                                                                    tmp_path: Path) -> None:
    store = redis.Redis.from_url(redis_url)
    with LocalService(redis_url, config=replace(WITH_AI, ai_join_ms=500)) as engine, \
            Client(engine.address) as client:
        early = client.create(opponent="ai", ai_level=1)
        assert _phase_within(client, early.match_id, 10) == types_pb2.MATCH_PHASE_FINISHED
        assert client.view(early.match_id).end_reason == types_pb2.END_REASON_CANCELLED
        worker = start_worker(engine.address, redis_url, tmp_path / "worker.log")
        try:
            later = client.create(opponent="ai", ai_level=1)
            assert _phase_within(client, later.match_id, 30) == types_pb2.MATCH_PHASE_PLAYING
            pending = store.xpending_range(REQUESTS_KEY, GROUP, min="-", max="+", count=10)
            assert len(pending) == 1  # the cancelled match's request was acknowledged
        finally:
            stop(worker)
    assert "dropped" in (tmp_path / "worker.log").read_text()
    store.close()
