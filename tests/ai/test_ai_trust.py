"""The hosted AI's trust model and capacity (issue #14), on `battleline serve` as it ships:
real processes on loopback, an embedded Redis, the AI child and its workers.

What is shown: no secret on any command line below serve; nothing read from Redis
takes the AI's seat; a restarted serve plays its AI matches on; idle AI matches
cannot starve the AI; per-client caps; an AI match refused at once where no AI
can join; no client-chosen seed against the AI.
"""

from __future__ import annotations

import contextlib
import random
import re
import stat
import subprocess
import time
from pathlib import Path
from urllib.parse import urlparse

import grpc
import pytest
import redis

from battleline.v1 import lobby_pb2, lobby_pb2_grpc, types_pb2
from battleline_client.client import Client
from battleline_client.common import is_finished, is_my_turn
from battleline_client.errors import BattleLineError, InvalidRequest, RateLimited
from tests.ai.service_harness import play_random, wait_phase
from tests.processes import command_line, descendants, start_serve, stop_serve

_URL = re.compile(r"(?:redis://:[^@\s]+@[\w.:]+/\d+|unix://:[^@\s]+@/[\w./-]+)")


def _serve(data_dir: Path, *extra: str,
           env: dict[str, str] | None = None) -> tuple[subprocess.Popen[str], str]:
    return start_serve("--no-web", "--data-dir", str(data_dir), "--log-format", "text",
                       "--log-level", "warning", *extra, env=env)


def _workers(process: subprocess.Popen[str], timeout_s: float = 30) -> list[int]:
    """The AI worker processes below serve, once they run."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = [p for p in descendants(process.pid)
                 if "battleline_ai.worker" in " ".join(command_line(p))]
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError("serve started no AI worker")


def _redis_url(process: subprocess.Popen[str]) -> str:
    """The embedded Redis URL, as a local user of the same account finds it (the
    environment of serve's children, or, before the fix, their command lines)."""
    for pid in [process.pid, *descendants(process.pid)]:
        with contextlib.suppress(OSError):
            text = Path(f"/proc/{pid}/environ").read_bytes().decode(errors="replace")
            text += " " + " ".join(command_line(pid))
            found = _URL.search(text)
            if found:
                return found.group(0)
    raise AssertionError("no Redis URL found below serve")


def test_no_secret_is_on_the_command_line_of_serve_or_any_child(tmp_path: Path) -> None:
    """Finding 1: /proc/PID/cmdline is world-readable; the Redis password and the AI's
    key must be in none of them (they travel by environment and a 0600 file)."""
    process, address = _serve(tmp_path)
    try:
        _workers(process)
        with Client(address) as client:  # the AI moves: its search processes run too
            created = client.create(opponent="ai", ai_level=1, seat="first")
            play_random(client, [client.seat(created.seat)], random.Random(1), until=2)
        password = urlparse(_redis_url(process)).password
        assert password
        below = [process.pid, *descendants(process.pid)]
        # serve, its store, battleline ai, a worker and its search process (at least)
        assert len(below) >= 5, [command_line(p) for p in below]
        key_file = tmp_path / "ai.key"
        for pid in below:
            line = " ".join(command_line(pid))
            assert password not in line, f"the Redis password on the command line: {line}"
        assert key_file.exists(), "the AI key is kept under the data dir"
        assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
        key = key_file.read_text().strip()
        for pid in below:
            assert key not in " ".join(command_line(pid)), f"the AI key on {pid}'s command line"
    finally:
        stop_serve(process)


def _tcp_listeners(pids: list[int]) -> set[int]:
    """The TCP ports these processes listen on (their sockets in /proc/net/tcp*)."""
    inodes = set()
    for pid in pids:
        with contextlib.suppress(OSError):
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                with contextlib.suppress(OSError):
                    target = fd.readlink().name
                    if target.startswith("socket:["):
                        inodes.add(target[8:-1])
    ports = set()
    for table in ("tcp", "tcp6"):
        for row in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = row.split()
            if fields[3] == "0A" and fields[9] in inodes:  # LISTEN
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def test_the_ai_service_and_redis_of_serve_listen_on_private_sockets(tmp_path: Path) -> None:
    """A free loopback port can be bound by any local user before (or while a restart
    leaves it free) the child it was meant for does, and the engine would send that user
    the AI's key or the Redis password. Serve's AI service and embedded Redis listen on
    Unix sockets in directories only their owner may enter: serve and its children
    listen on the engine's port alone (no web page here), and a hint still arrives."""
    process, address = _serve(tmp_path, "--ai-workers", "1")
    try:
        _workers(process)
        with Client(address) as client:
            created = client.create(opponent="local", ruleset="standard")
            hint = client.seat(created.seat).hint(budget_ms=100)
            assert hint.suggestion.action
        below = [process.pid, *descendants(process.pid)]
        assert _tcp_listeners(below) == {int(address.rsplit(":", 1)[1])}
        ai = [command_line(p) for p in below if "ai" in command_line(p)[2:4]]
        assert ai and "--socket" in ai[0] and "--port" not in ai[0], ai
        ai_socket = Path(ai[0][ai[0].index("--socket") + 1])
        redis_socket = Path(urlparse(_redis_url(process)).path)
        for socket in (ai_socket, redis_socket):
            assert socket.is_socket()
            assert stat.S_IMODE(socket.parent.stat().st_mode) == 0o700
    finally:
        stop_serve(process)
    assert not ai_socket.parent.exists() and not redis_socket.parent.exists()


def test_nothing_read_from_redis_takes_the_ai_seat(tmp_path: Path) -> None:
    """Finding 1: with the Redis password, a local user could read the AI request's join
    ticket and re-send it to get the AI's seat token. Every value in the request stream
    and in the match's seat hash is now worthless to a caller."""
    process, address = _serve(tmp_path)
    store: redis.Redis | None = None
    try:
        with Client(address) as client, grpc.insecure_channel(address) as channel:
            created = client.create(opponent="ai", ai_level=1, clock="per-move",
                                    clock_seconds=60)
            assert wait_phase(client, created.match_id, types_pb2.MATCH_PHASE_PLAYING, 30)
            store = redis.Redis.from_url(_redis_url(process), decode_responses=True)
            found: set[str] = set()
            for _id, fields in store.xrange("bl:ai:requests"):
                found |= set(fields.values())
            for key in store.scan_iter(f"bl:{{{created.match_id}}}:*"):
                if store.type(key) == "hash":
                    found |= set(store.hgetall(key).values()) | set(store.hkeys(key))
            found -= {"", created.match_id}
            assert found
            lobby = lobby_pb2_grpc.LobbyServiceStub(channel)
            for value in found:
                with pytest.raises(grpc.RpcError) as refused:
                    lobby.JoinMatch(lobby_pb2.JoinMatchRequest(
                        match_id=created.match_id, join_ticket=value), timeout=10)
                assert refused.value.code() in (grpc.StatusCode.PERMISSION_DENIED,
                                                grpc.StatusCode.FAILED_PRECONDITION,
                                                grpc.StatusCode.INVALID_ARGUMENT), value
                if not (value.isascii() and value.isprintable()) or " " in value:
                    continue  # a state or settings text: no header could carry it
                with pytest.raises(BattleLineError):
                    client.view(created.match_id, value)
                with pytest.raises(BattleLineError):
                    client.view(created.match_id, f"{created.match_id}.{value}")
    finally:
        if store is not None:
            store.close()
        stop_serve(process)


def test_a_restarted_serve_plays_its_ai_matches_on(tmp_path: Path) -> None:
    """Finding 3: the AI's key is kept under the data dir, so the AI of a new serve on
    the same data takes over the matches of the old one and moves again."""
    process, address = _serve(tmp_path)
    rng = random.Random(14)
    try:
        with Client(address) as client:
            created = client.create(opponent="ai", ai_level=1, clock="per-move",
                                    clock_seconds=120, seat="first")
            handle = created.seat
            play_random(client, [client.seat(handle)], rng, until=2, timeout_s=60)
        stop_serve(process)
        process, address = _serve(tmp_path)
        with Client(address) as client:
            seat = client.seat(handle)
            before = seat.view().version
            play_random(client, [seat], rng, until=1, timeout_s=30)  # our move...
            deadline = time.monotonic() + 45
            while not is_my_turn(view := seat.view()) and not is_finished(view):
                assert time.monotonic() < deadline, "the AI did not move after the restart"
                time.sleep(0.2)
            assert view.version >= before + 2
            play_random(client, [seat], rng, timeout_s=120)
            view = seat.view()
            assert is_finished(view) and view.end_reason != types_pb2.END_REASON_TIMEOUT
    finally:
        stop_serve(process)


def test_idle_ai_matches_do_not_starve_the_ai(tmp_path: Path) -> None:
    """Finding 2: 17 AI matches whose human never moves (created inside the create
    burst), then one more: every one gets its AI at once. The AI's joins are not
    rate-limited as a stranger's, and a worker holds more than 16 matches."""
    process, address = _serve(tmp_path, env={"BATTLELINE_AI_MATCHES_PER_CLIENT": "40"})
    try:
        with Client(address) as client:
            _workers(process)
            idle = [client.create(opponent="ai", ai_level=1, clock="none", seat="first")
                    for _ in range(17)]
            deadline = time.monotonic() + 15
            waiting = [c.match_id for c in idle]
            while waiting and time.monotonic() < deadline:
                waiting = [m for m in waiting
                           if client.view(m).phase == types_pb2.MATCH_PHASE_WAITING]
                time.sleep(0.2)
            assert not waiting, f"{len(waiting)} of 17 AI matches never got their AI"
            late = client.create(opponent="ai", ai_level=1, clock="none", seat="first")
            assert wait_phase(client, late.match_id, types_pb2.MATCH_PHASE_PLAYING, 10)
    finally:
        stop_serve(process)


def test_ai_matches_are_capped_per_client_and_none_is_endless(tmp_path: Path) -> None:
    """Finding 2 and the seed: at most 4 open AI matches per client (a finished one
    frees its place), a clockless AI match still has a per-move limit, and a seed is
    refused when the other seat is the AI's."""
    process, address = _serve(tmp_path)
    try:
        with Client(address) as client:
            held = [client.create(opponent="ai", ai_level=1, clock="none", seat="first")
                    for _ in range(4)]
            with pytest.raises(RateLimited) as capped:
                client.create(opponent="ai", ai_level=1, seat="first")
            assert capped.value.reason == "ai-matches-per-client"
            view = client.seat(held[0].seat).view()
            assert view.options.time_control.kind == types_pb2.TIME_CONTROL_KIND_PER_MOVE
            assert view.options.time_control.limit.seconds == 900
            assert wait_phase(client, held[0].match_id, types_pb2.MATCH_PHASE_PLAYING, 30)
            client.seat(held[0].seat).resign()
            client.create(opponent="ai", ai_level=1, seat="first")  # a place again
            client.create(opponent="local", seed=3)  # LOCAL: both seats are the caller's
            with pytest.raises(InvalidRequest) as seeded:
                client.create(opponent="ai", ai_level=1, seed=3)
            assert seeded.value.reason == "seed-refused"
    finally:
        stop_serve(process)


@pytest.mark.parametrize("flag", ["--no-ai", "--tls"])
def test_an_ai_match_is_refused_at_once_where_no_ai_can_join(tmp_path: Path, flag: str) -> None:
    """Low item: with --no-ai (and no BATTLELINE_AI_KEY for an AI run elsewhere) or with
    --tls-cert, CreateMatch against the AI is FAILED_PRECONDITION, not a wait forever."""
    extra: tuple[str, ...] = ("--no-ai",)
    credentials = None
    if flag == "--tls":
        cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                        "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1",
                        "-keyout", str(key), "-out", str(cert)], check=True,
                       capture_output=True)
        extra = ("--tls-cert", str(cert), "--tls-key", str(key))
        credentials = grpc.ssl_channel_credentials(cert.read_bytes())
    process, address = _serve(tmp_path / "data", *extra,
                              env={"BATTLELINE_AI_KEY": ""})
    try:
        with Client(address, credentials=credentials) as client:
            start = time.monotonic()
            with pytest.raises(BattleLineError) as refused:
                client.create(opponent="ai", ai_level=3)
            assert refused.value.code == grpc.StatusCode.FAILED_PRECONDITION
            assert refused.value.reason == "no-hosted-ai"
            assert time.monotonic() - start < 5
            client.create(opponent="local")  # the rest still works
    finally:
        stop_serve(process)


def test_a_kept_ai_key_is_made_private_beside_an_external_redis(tmp_path: Path,
                                                                  redis_url: str) -> None:
    """Tenth audit: with REDIS_URL set nothing tightened the data directory, so a key
    file left readable (copied under umask 022, or by an older version) was used as it
    was, and whoever read it acted for the AI's seat in every match. Now it is made 0600
    in a 0700 directory whatever the Redis; a symbolic link in its place is refused."""
    data = tmp_path / "data"
    data.mkdir(mode=0o755)
    data.chmod(0o755)
    key_file = data / "ai.key"
    key_file.write_text("kept-ai-key-0123456789abcdef\n")
    key_file.chmod(0o644)
    process, _ = start_serve("--no-web", "--data-dir", str(data), env={"REDIS_URL": redis_url})
    try:
        assert stat.S_IMODE(data.stat().st_mode) == 0o700
        assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
        assert key_file.read_text().strip() == "kept-ai-key-0123456789abcdef"  # still the key
    finally:
        stop_serve(process)

    elsewhere = tmp_path / "elsewhere.key"
    key_file.rename(elsewhere)
    key_file.symlink_to(elsewhere)
    with pytest.raises(AssertionError, match="Too many levels of symbolic links"):
        start_serve("--no-web", "--data-dir", str(data), env={"REDIS_URL": redis_url},
                    stderr=subprocess.PIPE)


def test_a_short_ai_key_stops_serve_at_start(tmp_path: Path) -> None:
    """The AI refuses a key under 16 characters; serve must not start an engine that
    admits an AI which can never run."""
    process = None
    try:
        with pytest.raises(AssertionError, match="BATTLELINE_AI_KEY"):
            process, _ = start_serve("--no-web", "--data-dir", str(tmp_path),
                                     env={"BATTLELINE_AI_KEY": "too-short"},
                                     stderr=subprocess.PIPE)
    finally:
        if process is not None:
            stop_serve(process)
