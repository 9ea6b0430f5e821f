"""Fault tests with real processes: nothing acknowledged is lost when a process dies.

(a) a local 3-master Redis Cluster and two `battleline serve` engines; one engine is
    SIGKILLed mid-run and restarted.
(b) one Redis node (append-only, fsync on every write) and two engines; Redis is
    SIGKILLed mid-run and restarted on the same data directory.

The load driver (tests/deploy/load.py) keeps a ledger of every acknowledged action
and compares it with the stored records at the end. No AI worker takes part yet:
`battleline ai` did not exist when these were written (LOCAL matches only).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator

import pytest

from .load import Driver
from .procs import EngineProcess, RedisCluster, RedisNode

MATCHES = 100
CONCURRENCY = 8
WATCH_EVERY = 4  # 25 watched matches per run, on the engine that gets killed
FAST_ENV = {"BATTLELINE_CREATE_RATE": "1000", "BATTLELINE_ACTION_RATE": "1000"}


@pytest.fixture
def engines() -> Iterator[Callable[[str], list[EngineProcess]]]:
    """Start two engines on a Redis URL; all are SIGKILLed at the end whatever happens."""
    started: list[EngineProcess] = []

    def start(url: str) -> list[EngineProcess]:
        for _ in range(2):
            engine = EngineProcess(url, extra_env=FAST_ENV)
            started.append(engine)
            engine.start()
        return started

    yield start
    for engine in started:
        engine.stop()


def _run(addresses: list[str], seed: int, at: int, fault: Callable[[], None]) -> Driver:
    """Play the matches; when `at` have finished, run `fault` (kill, pause, restart) in a
    thread so the other matches keep going meanwhile. The driver keeps the report."""

    async def main() -> Driver:
        driver = Driver(addresses, seed=seed)  # grpc.aio channels belong to this loop
        pending: list[asyncio.Future[None]] = []

        async def progress(done: int) -> None:
            if done == at:
                pending.append(asyncio.get_running_loop().run_in_executor(None, fault))

        start = time.monotonic()
        try:
            await driver.run(MATCHES, CONCURRENCY, WATCH_EVERY, progress)
            await asyncio.gather(*pending)
            driver.report = await driver.audit()
            driver.report["seconds"] = round(time.monotonic() - start, 1)
        finally:
            await driver.close()
        return driver

    return asyncio.run(main())


def _print(name: str, driver: Driver, kills: int, restarts: int) -> None:
    report = driver.report
    s = driver.stats
    print(f"\n{name}: matches={s.matches} actions={s.actions} acked_events="
          f"{report['acked_events']} requests={s.requests} retries={s.retries} "
          f"retried_codes={s.errors} kills={kills} restarts={restarts} watched={s.watched} "
          f"resumes={s.resumes} losses={report['losses']} unfinished={report['unfinished']} "
          f"gaps={report['gaps']} seconds={report['seconds']}")


def _check(driver: Driver) -> None:
    report = driver.report
    assert driver.stats.matches == MATCHES
    assert report["losses"] == 0
    assert report["unfinished"] == 0
    assert report["gaps"] == 0
    assert driver.stats.watched == MATCHES // WATCH_EVERY


@pytest.mark.timeout(300)
def test_engine_killed_and_restarted_on_redis_cluster(
    cluster: RedisCluster, engines: Callable[[str], list[EngineProcess]]
) -> None:
    pair = engines(cluster.url)
    kills = restarts = 0

    def fault() -> None:
        nonlocal kills, restarts
        pair[0].kill()
        kills += 1
        time.sleep(2.0)  # the survivor carries the load; clients retry onto it
        pair[0].start()
        restarts += 1

    driver = _run([e.address for e in pair], 7, MATCHES // 3, fault)
    _print("redis-cluster engine-kill", driver, kills, restarts)
    _check(driver)
    assert kills == restarts == 1
    assert driver.stats.retries > 0, "the kill was never noticed by a client"
    assert driver.stats.resumes > 0, "no watch stream was broken by the kill"


@pytest.mark.timeout(300)
def test_redis_killed_and_restarted_with_fsync_always(
    single_redis: RedisNode, engines: Callable[[str], list[EngineProcess]]
) -> None:
    pair = engines(single_redis.url)
    kills = restarts = 0

    def fault() -> None:
        nonlocal kills, restarts
        single_redis.kill()
        kills += 1
        time.sleep(1.0)  # every call meanwhile is UNAVAILABLE; clients back off and retry
        single_redis.start()
        restarts += 1

    driver = _run([e.address for e in pair], 11, MATCHES // 3, fault)
    _print("single-redis kill (appendfsync always)", driver, kills, restarts)
    _check(driver)
    assert kills == restarts == 1
    assert driver.stats.retries > 0, "the kill was never noticed by a client"


@pytest.mark.timeout(300)
def test_cluster_master_killed_and_restarted(
    cluster: RedisCluster, engines: Callable[[str], list[EngineProcess]]
) -> None:
    """A master without replicas is SIGKILLed and restarted on its data directory (its
    slots are unreachable meanwhile); calls touching them fail UNAVAILABLE and are retried."""
    pair = engines(cluster.url)
    kills = restarts = 0

    def fault() -> None:
        nonlocal kills, restarts
        cluster.nodes[1].kill()
        kills += 1
        time.sleep(1.0)  # shorter than cluster-node-timeout: no failover, no CLUSTERDOWN
        cluster.nodes[1].start()
        restarts += 1

    driver = _run([e.address for e in pair], 13, MATCHES // 3, fault)
    _print("redis-cluster master-kill", driver, kills, restarts)
    _check(driver)
    assert kills == restarts == 1
