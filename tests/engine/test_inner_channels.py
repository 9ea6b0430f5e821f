"""Twenty-ninth audit: the servers' own channels sent what acts for many seats to another
local user's process on the port they dial. The hosted AI's worker sent its key (every AI
seat's token) to a squatter on a restarting engine's port, and serve's own AI did so after
serve was killed; the web gateway sent browsers' tokens and its secret; the engine sent
the AI's key and a seat's hand to a squatter on the AI service's port; and under `serve
--host localhost` a squatter on [::1] got all of them while serve ran. Now each such
channel checks who is on its target before every call (`AsyncOwnerCheck`, trusting only
its own user and root), serve's AI and web page dial the engine's unix socket in a
directory of its own, and serve refuses a `localhost` port taken on either loopback."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import grpc.aio
import pytest

from battleline.v1 import ai_pb2, game_pb2
from battleline_client.aio import AsyncClient
from battleline_client.client import Client
from battleline_client.errors import BattleLineError, Unavailable
from battleline_client.port_owner import UNTRUSTED, AsyncOwnerCheck, OwnerCheck
from battleline_engine.errors import Kind, Refusal
from battleline_engine.hints import HintClient
from battleline_engine.listening import CannotListen
from battleline_gateway.bridge import Upstream
from battleline_host.local import LocalService
from tests.ai.service_harness import AI_KEY, WITH_AI, start_worker, stop
from tests.processes import BATTLELINE, free_port, start_serve, stop_serve
from tests.squatters import SQUATTER, STRANGER, squat

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="needs root to run the squatter as another user")
SECRET = "gateway-secret-0123456789abcdef"


@pytest.fixture
def squatting(tmp_path: Path) -> Iterator[tuple[str, list[subprocess.Popen[str]]]]:
    """A free loopback address, and the squatters a test starts there (killed after it)."""
    script = tmp_path / "squatter.py"
    script.write_text(SQUATTER)
    started: list[subprocess.Popen[str]] = []
    yield f"127.0.0.1:{free_port()}", started
    for squatter in started:
        squatter.kill()


def _calls(squatter: subprocess.Popen[str]) -> str:
    """Every call the squatter got, with its metadata."""
    squatter.kill()
    return squatter.communicate(timeout=10)[0]


def _squat(address: str, tmp_path: Path, started: list[subprocess.Popen[str]]
           ) -> subprocess.Popen[str]:
    squatter = squat(address, STRANGER, tmp_path / "squatter.py")
    started.append(squatter)
    return squatter


@pytest.mark.parametrize("checked", [True, False], ids=["with its check", "unchecked"])
def test_the_asyncio_client_sends_nothing_to_whoever_takes_a_stopped_engines_port(
        redis_url: str, tmp_path: Path, checked: bool,
        squatting: tuple[str, list[subprocess.Popen[str]]]) -> None:
    """The twenty-eighth audit left the asyncio client without the check the commands'
    client has; with `AsyncOwnerCheck` a game's next call is refused, not sent (the
    unchecked client, the control, sends the squatter the seat's token)."""
    address, started = squatting
    engine = LocalService(redis_url, port=int(address.rsplit(":", 1)[1]))
    engine.start()

    async def a_game_then_a_squatter() -> tuple[str, BattleLineError]:
        interceptors = (AsyncOwnerCheck(address),) if checked else ()
        async with AsyncClient(address, interceptors=interceptors) as client:
            seat = client.seat((await client.create(opponent="local", clock="none")).seat)
            await seat.view()
            await asyncio.to_thread(engine.stop)
            await asyncio.to_thread(_squat, address, tmp_path, started)
            with pytest.raises(BattleLineError) as refused:
                await seat.view()
            return seat.handle.token, refused.value

    try:
        token, error = asyncio.run(a_game_then_a_squatter())
    finally:
        engine.stop()
    calls = _calls(started[0])
    if checked:
        assert isinstance(error, Unavailable) and error.reason == UNTRUSTED, error
        assert f"uid {STRANGER}" in error.message and token not in calls, calls
    else:
        assert token in calls, calls


def test_the_hosted_ai_sends_its_key_to_no_other_users_process(
        redis_url: str, tmp_path: Path,
        squatting: tuple[str, list[subprocess.Popen[str]]]) -> None:
    """An AI match asked while the engine ran; the engine stopped, another user's process
    took its port: the worker that takes the request (`battleline ai --engine`) sends it
    nothing, and says why (the audit: the key 45 times in one restart)."""
    address, started = squatting
    with LocalService(redis_url, port=int(address.rsplit(":", 1)[1]), config=WITH_AI), \
            Client(address) as client:
        client.create(opponent="ai", ai_level=1, clock="none")
    squatter = _squat(address, tmp_path, started)
    log = tmp_path / "worker.log"
    worker = start_worker(address, redis_url, log)
    said = f"another user (uid {STRANGER})"
    try:
        deadline = time.monotonic() + 60
        while said not in log.read_text() and time.monotonic() < deadline:
            assert worker.poll() is None, log.read_text()
            time.sleep(0.1)
    finally:
        stop(worker)
    calls = _calls(squatter)
    assert said in log.read_text(), log.read_text()
    assert AI_KEY not in calls and "/battleline.v1." not in calls, calls


@pytest.mark.parametrize("form", ["", "dns:///", "ipv4:"])
def test_the_web_gateways_channel_sends_a_squatter_nothing(
        tmp_path: Path, squatting: tuple[str, list[subprocess.Popen[str]]], form: str) -> None:
    """`battleline web --engine` forwarded browsers' tokens and its secret (which lifts
    every per-client limit) to a squatter on the engine's port while it was down; its
    re-test, with the engine named in gRPC's other forms (`dns:///`, `ipv4:`)."""
    address, started = squatting
    squatter = _squat(address, tmp_path, started)

    async def forward() -> grpc.aio.AioRpcError:
        upstream = Upstream(form + address, SECRET)
        call = upstream.channel.unary_unary(
            "/battleline.v1.GameService/GetView",
            request_serializer=game_pb2.GetViewRequest.SerializeToString,
            response_deserializer=game_pb2.GetViewResponse.FromString)
        try:
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await call(game_pb2.GetViewRequest(match_id="m0000000001"),
                           metadata=(("authorization", "Bearer browser-token"),
                                     ("x-battleline-gateway-secret", SECRET)), timeout=10)
            return refused.value
        finally:
            await upstream.close(0)

    error = asyncio.run(forward())
    calls = _calls(squatter)
    assert error.code() == grpc.StatusCode.UNAVAILABLE, error
    assert f"uid {STRANGER}" in (error.details() or ""), error
    assert SECRET not in calls and "browser-token" not in calls and "/battleline" not in calls


def test_the_engines_hints_send_the_ai_key_to_no_squatter(
        tmp_path: Path, squatting: tuple[str, list[subprocess.Popen[str]]]) -> None:
    """The engine's channel to an AI service on a loopback port (`--ai-address`) sent
    the AI's key and the asking seat's view, hand included, to a squatter there."""
    address, started = squatting
    squatter = _squat(address, tmp_path, started)
    hints = HintClient(address, AI_KEY)
    busy: list[bool] = []

    async def ask() -> None:
        await hints.suggest(ai_pb2.SuggestRequest(), 10, "owner", lambda: busy.append(True))

    with pytest.raises(Refusal) as refused:
        asyncio.run(ask())
    calls = _calls(squatter)
    assert refused.value.kind == Kind.UNAVAILABLE and not busy, refused.value
    assert AI_KEY not in calls and "/battleline" not in calls, calls


def test_serve_on_localhost_refuses_a_port_taken_on_either_loopback(
        tmp_path: Path, squatting: tuple[str, list[subprocess.Popen[str]]]) -> None:
    """Under `--host localhost` serve bound 127.0.0.1 and ran beside another user's
    process on [::1]:P, where its own AI, its web page and localhost's clients went."""
    address, started = squatting
    port = address.rsplit(":", 1)[1]
    _squat(f"[::1]:{port}", tmp_path, started)
    result = subprocess.run(
        [BATTLELINE, "serve", "--host", "localhost", "--port", port, "--no-web",
         "--no-ai", "--data-dir", str(tmp_path / "data")],
        capture_output=True, text=True, timeout=60)
    assert result.returncode == 1, result.stderr
    assert f"cannot listen on localhost:{port}" in result.stderr, result.stderr


def test_the_engines_hints_send_nothing_to_a_socket_another_user_made(
        tmp_path: Path, squatting: tuple[str, list[subprocess.Popen[str]]]) -> None:
    """An AI service's socket in a directory everyone may write (`--ai-address
    unix:/tmp/shared/ai.sock`): another user made it before the AI started, and got the
    AI's key on each hint. The socket's owner is checked as a listener's is."""
    _, started = squatting
    shared = Path(tempfile.mkdtemp(prefix="battleline-tests-shared-"))  # pytest's is 0700
    try:
        shared.chmod(0o1777)
        squatter = _squat(f"unix:{shared / 'ai.sock'}", tmp_path, started)
        hints = HintClient(f"unix:{shared / 'ai.sock'}", AI_KEY)

        async def ask() -> None:
            await hints.suggest(ai_pb2.SuggestRequest(), 10, "owner", lambda: None)

        with pytest.raises(Refusal) as refused:
            asyncio.run(ask())
        calls = _calls(squatter)
    finally:
        shutil.rmtree(shared)
    assert refused.value.kind == Kind.UNAVAILABLE, refused.value
    assert AI_KEY not in calls and "/battleline" not in calls, calls


def test_the_ai_service_serves_on_no_socket_others_may_make_or_replace(tmp_path: Path) -> None:
    """`battleline ai --socket` in a directory others may write is refused before
    anything starts; the directory `serve` makes for it is not."""
    from battleline_client.port_owner import others_may_enter
    from battleline_engine.socket_dirs import private_socket_dir, remove_socket_dir

    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    result = subprocess.run(
        [BATTLELINE, "ai", "--socket", str(shared / "ai.sock"), "--engine", "127.0.0.1:1"],
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "BATTLELINE_AI_KEY": AI_KEY, "REDIS_URL": "redis://127.0.0.1:1"})
    assert result.returncode == 2 and "another user may make or replace" in result.stderr, \
        result.stderr
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o700)
    os.chown(theirs, STRANGER, STRANGER)
    assert others_may_enter(theirs / "ai.sock")
    assert others_may_enter(Path("/tmp/ai.sock"))  # 1777: anyone may make that name
    # Its re-test: a directory not there yet (whoever makes it first owns it), another
    # user's link in /tmp to a directory of ours (it may point it anywhere at any time).
    assert others_may_enter(tmp_path / "not-yet" / "ai.sock")
    private = private_socket_dir("tests")
    link = Path(tempfile.gettempdir()) / f"battleline-tests-link-{os.getpid()}"
    try:
        assert not others_may_enter(private / "ai.sock")  # 0700 in /tmp: sticky, ours
        link.symlink_to(private)
        assert not others_may_enter(link / "ai.sock")  # our link to our directory
        os.lchown(link, STRANGER, STRANGER)
        assert others_may_enter(link / "ai.sock")
        # The third re-test: that link reached inside a link of ours, or before a `..`
        # (which a path's text drops, and the kernel follows the link for).
        ours = private / "ours"
        ours.symlink_to(link)
        assert others_may_enter(ours / "ai.sock")
        assert others_may_enter(Path(f"{link}/../{private.name}/ai.sock"))
        assert not others_may_enter(Path(f"{private}/../{private.name}/ai.sock"))
        refused = subprocess.run(
            [BATTLELINE, "serve", "--no-ai", "--no-web", "--socket", str(link / "e.sock")],
            capture_output=True, text=True, timeout=60)
        assert refused.returncode == 2, refused.stderr
        assert "another user may make or replace" in refused.stderr
        # The servers' channels refuse such a path at every call too (the link flipped
        # between the other user's socket and nothing got the AI's key 3 runs of 3).
        check = AsyncOwnerCheck(f"unix:{link / 'ai.sock'}", strict=True)
        assert "another user may make or replace" in (check.refusal() or "")
        for form in ("%65ngine.sock", "engine.sock?x=1", "engine.sock#f"):  # gRPC decodes
            check = AsyncOwnerCheck(f"unix:{private / form}", strict=True)
            assert "cannot follow" in (check.refusal() or ""), form
    finally:
        link.unlink(missing_ok=True)
        remove_socket_dir(private)


def test_a_socket_path_the_check_cannot_read_is_refused_not_raised(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fourth re-test: a relative path from a working directory since removed raised
    (a traceback from `serve --socket`, a bare exception from a server's channel) instead
    of being refused; so did a link gone between its lstat and its readlink."""
    from battleline_client.port_owner import others_may_enter

    gone = tmp_path / "gone"
    gone.mkdir(mode=0o700)
    monkeypatch.chdir(gone)
    gone.rmdir()
    assert others_may_enter(Path("engine.sock"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "link").symlink_to(tmp_path)

    def vanished(path: object) -> str:
        raise FileNotFoundError(path)

    monkeypatch.setattr(os, "readlink", vanished)
    assert others_may_enter(tmp_path / "link" / "engine.sock")


def test_serve_also_listens_on_a_socket_for_the_parts_run_apart(tmp_path: Path) -> None:
    """The check before a call cannot close the race with a squatter that binds the port
    in the instant after it (the re-test won it for the gateway and the hints): parts run
    apart on this machine dial `serve --socket PATH` instead (`--engine unix:PATH`),
    which no other user can take in a directory only this user may write."""
    folder = tmp_path / "engine"
    folder.mkdir(mode=0o700)
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    refused = subprocess.run(
        [BATTLELINE, "serve", "--no-ai", "--no-web", "--socket", str(shared / "e.sock")],
        capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and "another user may make or replace" in refused.stderr
    process, _ = start_serve("--no-ai", "--no-web", "--data-dir", str(tmp_path / "data"),
                             "--socket", str(folder / "engine.sock"))
    try:
        with Client(f"unix:{folder / 'engine.sock'}",
                    interceptors=(OwnerCheck(f"unix:{folder / 'engine.sock'}"),)) as client:
            seat = client.seat(client.create(opponent="local", clock="none").seat)
            assert seat.view().legal_actions
    finally:
        stop_serve(process)


# Another user's listener on IPv6's wildcard with IPV6_V6ONLY, at the port given.
V6_ONLY_HOLDER = """
import os, socket, sys, time
os.setuid(int(sys.argv[2]))  # first: a socket is owned by whoever made it
holder = socket.socket(socket.AF_INET6)
holder.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
holder.bind(("::", int(sys.argv[1])))
holder.listen()
print("ready", flush=True)
time.sleep(120)
"""


def test_a_v6_only_listener_beside_ours_stops_no_call_and_keeps_the_engine_off(
        redis_url: str) -> None:
    """The re-test: another user listening on [::]:P with IPV6_V6ONLY beside the engine
    on 127.0.0.1:P (which no connection to it reaches) stopped every checked call of the
    AI's workers and a gateway while it was there. Beside a listener of this user's the
    kernel allows no other kind there, so it is passed over; once ours is gone it counts
    again. The engine itself no longer starts beside it: it holds ::1 at its port too,
    where `localhost` leads first, and the holder's wildcard has it."""
    port = free_port()
    address = f"127.0.0.1:{port}"
    holder = subprocess.Popen([sys.executable, "-c", V6_ONLY_HOLDER, str(port),
                               str(STRANGER)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        taken = rf"cannot listen on {address} \(\[::1\]:{port} is taken\)"
        with pytest.raises(CannotListen, match=taken):
            LocalService(redis_url, port=port).start()
        ours = socket.create_server(("127.0.0.1", port))
        check = OwnerCheck(address)
        assert check.refusal() is None  # the holder is there, and no call is stopped
        ours.close()
        refusal = check.refusal()
        assert refusal is not None and f"uid {STRANGER}" in refusal, refusal
    finally:
        holder.kill()
        holder.wait(10)
