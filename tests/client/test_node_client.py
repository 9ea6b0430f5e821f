"""The Node.js client (clients/node, @grpc/grpc-js with the protos loaded at run time)
plays a complete match against a live engine started by the test."""

from __future__ import annotations

import os
import random
import re
import shutil
import subprocess
import time
from collections.abc import Callable
from concurrent import futures
from pathlib import Path
from typing import Any, TypeVar

import grpc
import pytest

from battleline.v1 import lobby_pb2, lobby_pb2_grpc, types_pb2
from battleline_client.bots import choose
from battleline_client.client import Client
from battleline_client.common import is_finished, is_my_turn
from battleline_client.errors import BattleLineError
from battleline_host.local import LocalService
from tests.ai.service_harness import WITH_AI, start_worker, stop
from tests.client.test_hostile_text import INVITE

T = TypeVar("T")
NODE_DIR = Path(__file__).resolve().parents[2] / "clients" / "node"
pytestmark = pytest.mark.skipif(shutil.which("node") is None or shutil.which("npm") is None,
                                reason="Node.js and npm are needed")


@pytest.fixture(scope="module")
def node_modules() -> Path:
    """`npm ci` once, from package-lock.json, if the modules are not installed yet."""
    if not (NODE_DIR / "node_modules" / "@grpc" / "grpc-js").is_dir():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=NODE_DIR, check=True,
                       timeout=300, capture_output=True)
    return NODE_DIR / "node_modules"


def _play(*args: str) -> str:
    done = subprocess.run(["node", str(NODE_DIR / "play.js"), *args], capture_output=True,
                          text=True, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_node_client_plays_a_local_match(node_modules: Path, service: LocalService) -> None:
    out = _play("--target", service.address, "--ruleset", "standard")
    found = re.search(r"match over: winner (\S+) by (\S+) after (\d+) requests", out)
    assert found, out
    assert found.group(2).startswith("END_REASON_") and found.group(2) != "END_REASON_UNSPECIFIED"
    assert int(found.group(3)) > 20


def test_node_client_plays_one_seat_against_a_hosted_ai(
    node_modules: Path, redis_url: str, tmp_path: Path
) -> None:
    with LocalService(redis_url, config=WITH_AI) as engine:
        worker = start_worker(engine.address, redis_url, tmp_path / "worker.log")
        try:
            out = _play("--target", engine.address, "--ai", "3", "--timeout", "30")
        finally:
            stop(worker)
    assert "against the hosted AI level 3" in out
    assert re.search(r"match over: winner SEAT_\w+ by END_REASON_\w+", out), out


def test_node_client_reads_the_reason_of_a_refusal(node_modules: Path,
                                                   service: LocalService) -> None:
    """The example shows a client developer how to read a refusal's ErrorInfo outside
    Python (a walkthrough lost most of its time there): the reason is printed."""
    done = subprocess.run(["node", str(NODE_DIR / "play.js"), "--target", service.address],
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "BATTLELINE_INVITE": "no-such-invite"})
    assert done.returncode == 1, done.stdout + done.stderr
    assert "JoinMatch: NOT_FOUND invite-not-found:" in done.stderr, done.stderr


def _until_up(call: Callable[[], T], timeout_s: float = 30) -> T:
    """`call`, tried again while the engine is away (restarting)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return call()
        except BattleLineError as err:
            if err.code != grpc.StatusCode.UNAVAILABLE or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_node_client_invites_a_friend_and_plays_on_across_an_engine_restart(
        node_modules: Path, redis_url: str, port: int, tmp_path: Path) -> None:
    """A walkthrough: the example exited 0 in mid-game, silently, when its Watch stream
    dropped (a promise nothing resolved), and it could not create a friend's match or
    run with the protos elsewhere. Here it invites (`--friend`, protos copied away),
    this test plays the friend's seat, and the engine is stopped and started again while
    the example waits on its stream: it resumes and plays to the end."""
    protos = shutil.copytree(NODE_DIR.parents[1] / "protos", tmp_path / "protos")
    engine = LocalService(redis_url, port=port)
    address = engine.start()
    node = subprocess.Popen(["node", str(NODE_DIR / "play.js"), "--target", address,
                             "--friend", "--protos", str(protos), "--timeout", "60"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert node.stdout is not None
        first = node.stdout.readline()
        found = re.search(r"invite code: (\S+) ", first)
        assert found, first + (node.stderr.read() if node.stderr else "")
        rng = random.Random(5)
        with Client(address) as client:
            seat = client.seat(client.join(invite_code=found.group(1), name="friend"))
            moves = 0
            restarted = False
            deadline = time.monotonic() + 120
            while not is_finished(view := _until_up(seat.view)):
                if node.poll() is not None:  # it may have just made the last move
                    assert is_finished(_until_up(seat.view)), "the example ended early"
                    break
                assert time.monotonic() < deadline, "the match did not end"
                if not is_my_turn(view):
                    time.sleep(0.05)
                    continue
                if moves == 5 and not restarted:  # the example waits on its stream
                    engine.stop()
                    time.sleep(0.5)
                    engine = LocalService(redis_url, port=port)
                    engine.start()
                    restarted = True
                    continue
                _until_up(lambda: seat.act(*choose(view, rng)))
                moves += 1
        out, err = node.communicate(timeout=60)
    finally:
        if node.poll() is None:
            node.kill()
        engine.stop()
    assert restarted, "the match ended before the engine was restarted"
    assert node.returncode == 0, first + out + err
    assert "watch stream lost: resuming after event" in out, out
    assert re.search(r"match over: winner SEAT_\w+ by END_REASON_\w+", out), out


def test_node_client_cancels_a_friends_match_nobody_joined(node_modules: Path,
                                                           service: LocalService) -> None:
    """A review: the example gave up waiting and left the match open, holding one of its
    creator's places; it now cancels it, as `battleline play --friend` does."""
    done = subprocess.run(["node", str(NODE_DIR / "play.js"), "--target", service.address,
                           "--friend", "--timeout", "1"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "match cancelled" in done.stderr, done.stderr
    found = re.search(r"BATTLELINE_INVITE=(\S+) node play.js", done.stdout)
    assert found, done.stdout
    with Client(service.address) as client, pytest.raises(BattleLineError) as refused:
        client.join(invite_code=found.group(1), name="late")
    assert refused.value.reason in ("cancelled", "invite-not-found"), refused.value


class _HostileLobby(lobby_pb2_grpc.LobbyServiceServicer):
    """Answers a create with an invite code in shell syntax; every other call is
    UNIMPLEMENTED."""

    def CreateMatch(self, request: Any, context: Any) -> lobby_pb2.CreateMatchResponse:
        return lobby_pb2.CreateMatchResponse(match_id="m1", seat_token="t" * 32,
                                             seat=types_pb2.SEAT_FIRST, invite_code=INVITE)


def test_the_line_a_friend_pastes_runs_nothing_of_the_servers(node_modules: Path,
                                                               tmp_path: Path) -> None:
    """Twenty-eighth audit (as `battleline play`'s, tests/client/test_hostile_text.py): the
    example printed the server's invite code unquoted into the command a friend runs."""
    server = grpc.server(futures.ThreadPoolExecutor(2))
    lobby_pb2_grpc.add_LobbyServiceServicer_to_server(_HostileLobby(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        done = subprocess.run(["node", str(NODE_DIR / "play.js"), "--target",
                               f"127.0.0.1:{port}", "--friend", "--timeout", "1"],
                              capture_output=True, text=True, timeout=60)
    finally:
        server.stop(0)
    line = done.stdout.split("(your friend runs: ", 1)[1].split("\n", 1)[0].removesuffix(")")
    pasted = line.replace(" node play.js ", " printenv BATTLELINE_INVITE # ")
    ran = subprocess.run(["sh", "-c", pasted], cwd=tmp_path, capture_output=True, text=True,
                         check=True)
    assert ran.stdout == INVITE + "\n"
    assert not (tmp_path / "owned").exists()
