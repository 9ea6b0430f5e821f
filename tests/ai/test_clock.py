"""The hosted AI answers inside the match clock: think time from the seat's clock, and a
whole match on a 2-second per-move clock with no AI move late."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import redis

from battleline.v1 import types_pb2
from battleline_ai.budget import MARGIN_S, move_deadline
from battleline_client.client import Client
from battleline_client.common import answer_times
from battleline_host.local import LocalService
from tests.ai.service_harness import WITH_AI, play_random, start_worker, stop, wait_phase

CLOCK_S = 2.0


def _view(kind: int, remaining_s: float | None, running: bool = True) -> types_pb2.MatchView:
    view = types_pb2.MatchView(viewer=types_pb2.SEAT_FIRST)
    view.options.time_control.kind = kind
    if remaining_s is not None:
        clock = view.clocks.add(seat=types_pb2.SEAT_FIRST, running=running)
        clock.remaining.FromNanoseconds(int(remaining_s * 1e9))
        view.clocks.add(seat=types_pb2.SEAT_SECOND)
    return view


def test_think_time_comes_from_the_seats_clock() -> None:
    now, store_now = 1000.0, 5000.0
    per_move = _view(types_pb2.TIME_CONTROL_KIND_PER_MOVE, 2.0)
    assert move_deadline(per_move, 5.0, now, store_now) == pytest.approx(now + 1.0 - MARGIN_S)
    per_game = _view(types_pb2.TIME_CONTROL_KIND_PER_GAME, 150.0)
    assert move_deadline(per_game, 20.0, now, store_now) == pytest.approx(
        now + 10.0 - MARGIN_S)
    assert move_deadline(per_game, 3.0, now, store_now) == pytest.approx(now + 3.0)  # the cap
    nearly_out = _view(types_pb2.TIME_CONTROL_KIND_PER_MOVE, 0.2)
    assert move_deadline(nearly_out, 5.0, now, store_now) == now  # answer at once
    assert move_deadline(_view(types_pb2.TIME_CONTROL_KIND_NONE, None), 4.0, now,
                         store_now) == now + 4.0


def test_think_time_is_what_the_store_s_time_leaves_of_the_clock() -> None:
    """A running clock's deadline is on the store's time, which the AI worker keeps too:
    a view read 1.3 s after the engine wrote it (a stalled worker; 48 at once in a
    re-test) leaves its 2 s move 0.7 s, whatever this host's own clock says (one 10 s
    ahead had nothing of a 10 s move: the thirty-fifth audit)."""
    now, written = 1000.0, 5000.0
    view = _view(types_pb2.TIME_CONTROL_KIND_PER_MOVE, 2.0)
    view.clocks[0].deadline.FromNanoseconds(int((written + 2.0) * 1e9))
    assert move_deadline(view, 5.0, now, written + 0.005) == pytest.approx(
        now + 0.9975 - MARGIN_S)
    assert move_deadline(view, 5.0, now, written + 1.3) == pytest.approx(now + 0.35 - MARGIN_S)
    assert move_deadline(view, 5.0, now, written - 3.0) == pytest.approx(now + 1.0 - MARGIN_S)


@pytest.fixture
def engine(redis_url: str) -> Iterator[LocalService]:
    with LocalService(redis_url, config=WITH_AI) as running:
        yield running


def test_no_ai_move_is_late_on_a_short_per_move_clock(engine: LocalService, redis_url: str,
                                                      tmp_path: Path) -> None:
    worker = start_worker(engine.address, redis_url, tmp_path / "worker.log", move_cap=5.0)
    try:
        with Client(engine.address) as client:
            created = client.create(opponent="ai", ai_level=5, clock="per-move",
                                    clock_seconds=CLOCK_S, seat="second")
            seat = client.seat(created.seat)
            play_random(client, [seat], random.Random(7), timeout_s=150)
            view = seat.view()
            record = client.record(created.match_id, created.seat.token)
    finally:
        stop(worker)
    ai = types_pb2.SEAT_FIRST
    if view.end_reason == types_pb2.END_REASON_TIMEOUT:
        assert view.winner == ai, "the AI ran out of time"  # a slow test client may, not it
    gaps = answer_times(record, ai)
    assert len(gaps) > 5
    assert max(gaps) < CLOCK_S, f"slowest AI answer {max(gaps):.2f} s"


THINK_S = 0.4
PLAY_WORDS = {"play", "redeploy", "deserter", "traitor", "pass"}  # a turn's play step


def test_every_play_of_the_ai_takes_its_think_time_searched_or_not(
        engine: LocalService, redis_url: str, tmp_path: Path) -> None:
    """Level 5 answers a clear best in milliseconds and searches the rest: unevened, the
    time each play took told the other seat (and spectators, in every event's commit time)
    whether the AI's hand gave it a choice. Every play now comes `think` after its turn."""
    worker = start_worker(engine.address, redis_url, tmp_path / "worker.log", move_cap=5.0,
                          think=THINK_S)
    try:
        with Client(engine.address) as client:
            created = client.create(opponent="ai", ai_level=5, clock="none", seat="second")
            seat = client.seat(created.seat)
            play_random(client, [seat], random.Random(11), timeout_s=120, until=20)
            record = client.record(created.match_id, created.seat.token)
    finally:
        stop(worker)
    gaps, before = [], None
    for event in record.events:
        at = event.commit_time.ToNanoseconds() / 1e9
        if (event.seat == types_pb2.SEAT_FIRST and before is not None
                and event.text.split()[0] in PLAY_WORDS):
            gaps.append(at - before)
        before = at
    assert len(gaps) >= 10
    assert min(gaps) >= THINK_S, f"a play came {min(gaps):.3f} s after the move before it"
    assert max(gaps) < THINK_S + 0.6, f"a play came {max(gaps):.3f} s after the move before it"


def test_a_worker_takes_no_match_before_it_has_the_stores_time(
        engine: LocalService, redis_url: str, tmp_path: Path) -> None:
    """On its own host's clock a worker reads the engines' deadlines wrong (5 s ahead, a
    re-test's worker played whole games by the fallback): until Redis gives it the time
    (here its user may not ask for it, at first), it takes no match."""
    store = redis.Redis.from_url(redis_url)
    password = "timeless-0123456789"
    store.acl_setuser("timeless", enabled=True, passwords=[f"+{password}"], keys=["*"],
                      channels=["*"], commands=["+@all", "-time"])
    address = urlsplit(redis_url)
    log = tmp_path / "worker.log"
    worker = start_worker(engine.address, f"redis://timeless:{password}@{address.netloc}",
                          log)
    try:
        with Client(engine.address) as client:
            created = client.create(opponent="ai", ai_level=1, clock="per-move",
                                    clock_seconds=60, seat="second")
            deadline = time.monotonic() + 20
            while log.read_text().count("store clock") < 3:  # asked again and again
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.2)
            assert client.view(created.match_id).phase == types_pb2.MATCH_PHASE_WAITING
            store.acl_setuser("timeless", commands=["+time"])
            assert wait_phase(client, created.match_id, types_pb2.MATCH_PHASE_PLAYING, 20)
    finally:
        stop(worker)
        store.acl_deluser("timeless")
        store.close()
