"""The example scripts run against a live engine (examples/ is documentation that must work)."""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
from pathlib import Path

from battleline.v1 import types_pb2
from battleline_client.bots import play_local
from battleline_client.client import Client
from battleline_host.local import LocalService
from tests.ai.service_harness import WITH_AI, start_worker, stop

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _run(script: str, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run([sys.executable, str(EXAMPLES / script), *args], capture_output=True,
                          text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_reflect_lists_every_service_and_method(service: LocalService) -> None:
    out = _run("reflect.py", "--target", service.address, "--methods")
    for name in ("battleline.v1.LobbyService", "battleline.v1.GameService",
                 "battleline.v1.WatchService", "battleline.v1.RecordService",
                 "grpc.health.v1.Health", "grpc.reflection.v1alpha.ServerReflection"):
        assert name in out.splitlines()
    assert ("rpc Watch(battleline.v1.WatchRequest) returns "
            "(stream battleline.v1.WatchResponse)") in out


def test_create_and_play_and_asyncio_play(service: LocalService) -> None:
    last = _run("create_and_play.py", "--target", service.address, "--ruleset",
                "deck52").splitlines()[-1]
    assert last.startswith("winner SEAT_") and " by END_REASON_" in last, last  # named
    assert _run("asyncio_play.py", "--target", service.address, "--matches", "2").count(
        "requests") == 2


def test_watch_and_handle_errors(service: LocalService) -> None:
    with Client(service.address) as client:
        done = play_local(client, random.Random(9))
    out = _run("watch.py", done.match_id, "--target", service.address, "--resume-after", "3")
    assert out.splitlines()[0].startswith("#4 ") and "stream ended" in out
    errors = _run("handle_errors.py", "--target", service.address)
    assert "NotFound NOT_FOUND reason='match-not-found'" in errors
    assert "NotYourTurn PERMISSION_DENIED reason='not-your-turn'" in errors


def test_invite_friend_both_sides(service: LocalService) -> None:
    host = subprocess.Popen([sys.executable, str(EXAMPLES / "invite_friend.py"), "--target",
                             service.address], stdout=subprocess.PIPE, text=True)
    try:
        assert host.stdout is not None
        assert host.stdout.readline().startswith("match ")  # to follow it with watch.py
        code = host.stdout.readline().split()[-1]
        guest = _run("invite_friend.py", "--target", service.address,
                     env={**os.environ, "BATTLELINE_INVITE": code})
        assert "over: winner SEAT_" in guest
        assert host.wait(60) == 0 and "over: winner SEAT_" in host.stdout.read()
    finally:
        if host.poll() is None:
            host.kill()


def test_the_client_guides_quick_start_runs_as_written(service: LocalService) -> None:
    """The client guide's Python snippet is what a newcomer copies first: it played
    R7, which few deals hold, and caught an error its second call did not raise."""
    guide = (EXAMPLES.parent / "docs" / "client-guide.md").read_text()
    snippet = guide.split("```python\n", 1)[1].split("```", 1)[0]
    assert '"127.0.0.1:50051"' in snippet
    for _ in range(3):  # a fresh deal each run
        done = subprocess.run([sys.executable, "-c",
                               snippet.replace("127.0.0.1:50051", service.address)],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "not-your-turn" in done.stdout, done.stdout
        assert "['draw troop', 'draw tactic']" in done.stdout, done.stdout


def test_the_client_readmes_snippets_run_as_written(redis_url: str, tmp_path: Path) -> None:
    """clients/python/README.md (a walkthrough found the client had none): its bot plays a
    whole game against the hosted AI from the Watch stream, its first turn included (a
    bot that read only `message.view` missed it: the snapshot brings it), and its
    friend's-match lines create and join a private match."""
    readme = (EXAMPLES.parent / "clients" / "python" / "README.md").read_text()
    bot, friend = [block.split("```", 1)[0] for block in readme.split("```python\n")[1:]]
    assert '"127.0.0.1:50051"' in bot
    with LocalService(redis_url, config=WITH_AI) as engine:
        worker = start_worker(engine.address, redis_url, tmp_path / "worker.log")
        try:
            done = subprocess.run([sys.executable, "-c",
                                   bot.replace("127.0.0.1:50051", engine.address)],
                                  capture_output=True, text=True, timeout=300)
        finally:
            stop(worker)
        assert done.returncode == 0, done.stdout + done.stderr
        assert re.fullmatch(r"winner: SEAT_(FIRST|SECOND) we were: SEAT_(FIRST|SECOND)\n",
                            done.stdout), done.stdout
        with Client(engine.address) as client:
            namespace: dict[str, object] = {"client": client}
            exec(friend.replace('"THE-CODE"', "created.invite_code"), namespace)
            joined = namespace["seat"].view()  # type: ignore[attr-defined]
            assert joined.phase == types_pb2.MATCH_PHASE_PLAYING
