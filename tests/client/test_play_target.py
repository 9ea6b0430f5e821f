"""`battleline play` with no --target, as the README has a new user type it (issue #15):
it plays on the running `battleline serve` (127.0.0.1:50051), else starts an engine
with a hosted AI for the game; an AI that cannot come is an error at once, not a
five-minute wait. Driven in a real terminal (pexpect), against real processes."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from battleline_client.commands import options
from battleline_client.common import DEFAULT_TARGET
from battleline_client.errors import BattleLineError
from battleline_client.hosting import is_serving
from battleline_host.local import LocalService
from tests.ai.service_harness import WITH_AI
from tests.client import terminal
from tests.processes import BATTLELINE, free_port, start_serve, stop_serve


@pytest.fixture
def free_default_port() -> None:
    """The README's port must be free: these tests play there as a new user would."""
    if is_serving(DEFAULT_TARGET):
        pytest.skip(f"a Battle Line engine already serves {DEFAULT_TARGET}")
    host, port = DEFAULT_TARGET.rsplit(":", 1)
    deadline = time.monotonic() + 30  # a process of an earlier test may still be leaving it
    while True:
        try:
            with socket.socket() as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                probe.bind((host, int(port)))
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def _finished(session: terminal.Session) -> None:
    assert session.exitstatus == 0, session.output
    assert session.prompts > 5, session.output
    assert session.result.startswith("match over"), session.output


@pytest.fixture
def play_temp() -> Iterator[str]:
    """The temporary folder of the test's `battleline play`, short enough for the socket
    paths of the engine it starts there."""
    folder = tempfile.mkdtemp(prefix="bl-")
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _play(tmp_path: Path, *args: str,
          temp_dir: str | None = None) -> tuple[terminal.Session, str]:
    """A whole game answered with the first legal action; the session and all it showed."""
    log = tmp_path / "terminal.log"
    pool, pending = terminal.start([BATTLELINE, "play", *args], timeout_s=240,
                                   log_path=str(log), temp_dir=temp_dir)
    with pool:
        session = pending.get(270)
    return session, log.read_text(encoding="utf-8")


def test_play_uses_the_running_serve(free_default_port: None, tmp_path: Path) -> None:
    serve, address = start_serve("--port", "50051", "--no-web", "--data-dir", str(tmp_path))
    try:
        assert address == DEFAULT_TARGET
        session, shown = _play(tmp_path, "--auto-claim")
    finally:
        stop_serve(serve)
    _finished(session)
    assert f"playing on the engine at {DEFAULT_TARGET}" in shown


def test_play_with_no_engine_starts_one_with_its_ai(free_default_port: None, tmp_path: Path,
                                                   play_temp: str) -> None:
    session, shown = _play(tmp_path, "--auto-claim", temp_dir=play_temp)
    _finished(session)
    assert "a local engine with its hosted AI on 127.0.0.1:" in shown
    time.sleep(1)
    assert _left_behind(play_temp) == [], "the engine started for the game outlived it"


def _left_behind(temp_dir: str) -> list[str]:
    """Command lines of processes still running from the directory of an engine `play`
    started in `temp_dir` (not those of other tests' games, in processes beside this)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if f"{temp_dir}/battleline-play-" in text:
            found.append(text)
    return found


def test_play_refuses_an_ai_level_the_page_does_not_offer() -> None:
    done = subprocess.run([BATTLELINE, "play", "--ai", "7"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2
    assert "the hosted AI has levels 1 to 5, not 7" in done.stderr
    waited = subprocess.run([BATTLELINE, "play", "--friend", "--wait", "-5"],
                            capture_output=True, text=True, timeout=60)
    assert waited.returncode == 2 and "'--wait'" in waited.stderr, waited.stderr


@pytest.mark.parametrize(("command", "target"), [
    (["watch", "m1"], "127.0.0.1:112737"), (["review", "m1"], "127.0.0.1"),
    (["play", "--ai", "1"], "localhost:0"), (["loadtest", "--matches", "1"], "localhost:"),
])  # every form is checked in tests/client/test_library.py; here each command refuses one
def test_a_target_no_channel_reaches_as_written_is_refused(command: list[str],
                                                           target: str) -> None:
    """A fresh user's walkthrough: `--target 127.0.0.1:112737` reached a serve on 47201
    (gRPC takes the port modulo 65536) and a target with no port went to port 443. Each
    client command now refuses it before connecting, as typer refuses a bad option."""
    done = subprocess.run([BATTLELINE, *command, "--target", target], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "give HOST:PORT, the port from 1 to 65535" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_a_command_with_no_engine_at_its_target_says_what_to_start() -> None:
    """A fresh user's walkthrough: `watch` and `review` at a port nothing listens on
    printed only gRPC's "failed to connect to all addresses"."""
    target = f"127.0.0.1:{free_port()}"  # nothing listens there
    for command in (["watch", "m1"], ["review", "m1"]):
        done = subprocess.run([BATTLELINE, *command, "--target", target], capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 1, done.stdout + done.stderr
        said = " ".join(done.stdout.split())
        assert f"no engine answered on {target}: is `battleline serve` running there?" in said


def test_an_engine_that_answered_unavailable_itself_gets_no_hint_to_start_one() -> None:
    """A review of the hint above: the engine answers UNAVAILABLE itself when its AI or
    its storage is away (with a reason); only a call no engine answered gets the hint."""
    for reason, hinted in (("", True), ("no-ai-service", False), ("storage-unavailable", False)):
        error = BattleLineError("away", code=grpc.StatusCode.UNAVAILABLE, reason=reason)
        assert ("no engine answered on h:1" in options.failure(error, "h:1")) is hinted, reason
    refused = BattleLineError("no", code=grpc.StatusCode.NOT_FOUND, reason="match-not-found")
    assert options.failure(refused, "h:1") == str(refused)


def test_play_against_an_engine_without_a_hosted_ai_fails_at_once(redis_url: str) -> None:
    with LocalService(redis_url) as engine:
        started = time.monotonic()
        session = terminal.run([BATTLELINE, "play", "--target", engine.address], answer=False)
        took = time.monotonic() - started
    assert session.exitstatus == 1
    assert f"the engine at {engine.address} runs no hosted AI" in session.output
    assert took < 20


def test_play_waits_for_a_hosted_ai_worker_seconds_not_minutes(redis_url: str) -> None:
    # The engine admits the hosted AI, but no worker serves it (a crashed `battleline ai`).
    with LocalService(redis_url, config=WITH_AI) as engine:
        session = terminal.run([BATTLELINE, "play", "--target", engine.address, "--wait", "300"],
                               answer=False, timeout_s=90)
    assert session.exitstatus == 2
    assert "nobody took the other seat within 20 s" in session.output
    assert "no hosted-AI worker is serving this" in session.output


def _leave(temp_dir: str, at: str = terminal.MOVE, how: str = "ctrl-c") -> str:
    """`battleline play` with no engine running, left when the terminal shows `at`: by
    Ctrl-C, or by `how` = "SIGTERM" or "SIGHUP" (the terminal closed)."""
    import signal

    import pexpect

    # SIGINT at its default, as in a user's terminal: a test run started in the background
    # by a non-interactive shell ignores it, and every child would inherit that.
    child = pexpect.spawn(BATTLELINE, ["play"], encoding="utf-8", timeout=60,
                          dimensions=(60, 160), env=terminal.terminal_env(temp_dir),
                          preexec_fn=terminal.default_signals)
    try:
        child.expect(at)
        if how == "ctrl-c":
            child.sendintr()
        else:
            child.kill(getattr(signal, how))
        child.expect(pexpect.EOF)
        return child.before or ""
    finally:
        child.terminate(force=True)


def test_leaving_a_game_on_an_engine_started_for_it_says_the_match_ends(
        free_default_port: None, play_temp: str) -> None:
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(1) as pool:
        shown = pool.apply(_leave, (play_temp,))
    assert "the engine started for this game stops, and the match with it" in shown
    assert "goes on without you" not in shown
    time.sleep(1)
    assert _left_behind(play_temp) == []
    assert _folders_left(play_temp) == []


@pytest.mark.parametrize(("at", "how"), [("starting a local engine", "ctrl-c"),
                                         (terminal.MOVE, "SIGTERM"), (terminal.MOVE, "SIGHUP")],
                         ids=["ctrl-c-as-it-starts", "sigterm-at-a-move", "sighup-at-a-move"])
def test_an_engine_started_for_a_game_leaves_nothing_however_play_ends(
        free_default_port: None, play_temp: str, at: str, how: str) -> None:
    """An audit: a Ctrl-C while the engine started, or play killed (SIGTERM) or its
    terminal closed (SIGHUP) during the game, left the engine's folder (the AI's key, the
    store's files) in the temporary directory."""
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(1) as pool:
        pool.apply(_leave, (play_temp, at, how))
    time.sleep(1)
    assert _left_behind(play_temp) == []
    assert _folders_left(play_temp) == []


def _folders_left(temp_dir: str) -> list[str]:
    return [path.name for path in Path(temp_dir).glob("battleline-play-*")]


def test_an_engine_started_here_goes_when_its_starter_exits_any_way(play_temp: str) -> None:
    """A re-test: a signal that landed after the engine's start returned and before its
    caller's `try` (about a millisecond) left its folder, the AI's key in it. The engine
    is stopped at the interpreter's exit too, here one its caller never stopped."""
    import sys

    started = "from battleline_client.hosting import ServeChild\n" \
              "ServeChild('--no-ai').start()\nraise SystemExit(3)"
    done = subprocess.run([sys.executable, "-c", started], env=terminal.terminal_env(play_temp),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 3, done.stderr
    time.sleep(1)
    assert _left_behind(play_temp) == []
    assert _folders_left(play_temp) == []
