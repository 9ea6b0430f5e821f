"""Starting and stopping child processes, the one way every part of the project does it.

Standard library only: the light client (hosting a local `battleline serve`), the
server commands, the engine's embedded Redis and the AI service all use it; `serve`
and the AI service keep their children running with `keep_running`.

Children must not outlive the process that started them. `die_with_parent` as a
preexec_fn makes Python fork() the whole process to start the child, and in a
process already running gRPC that fork prints gRPC's "skipping fork() handlers"
warning (its threads cannot be paused). `dying_with_parent(command)` instead
starts a tiny interpreter that sets the same parent-death signal and then execs
the command: with no preexec_fn, subprocess starts it with vfork, which runs no
fork handlers.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

from .backoff import backoff


def stop_processes(*processes: subprocess.Popen[Any], timeout_s: float = 10.0) -> None:
    """SIGTERM to every one still running (so they stop together, and each can flush
    and take its leave), then SIGKILL whichever has not exited `timeout_s` after that.
    Returns once all have exited."""
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


QUICK_EXIT_S = 10.0  # a child exiting sooner than this after its start is crash-looping


async def keep_running(what: str, current: Callable[[], subprocess.Popen[Any]],
                       restart: Callable[[], Awaitable[None]], log: logging.Logger,
                       interval_s: float = 1.0) -> None:
    """Until cancelled: whenever the `current()` process has exited (a crash, the OOM
    killer, a SIGKILL), log it as an error and `restart()` it: serve went on without it,
    and said nothing (nineteenth audit; its AI, twenty-sixth). The AI service keeps its
    workers so too. One that keeps exiting at once, or cannot be started (`restart`
    raises OSError, RuntimeError or TimeoutError: no descriptors or memory left, not
    ready in time), is tried again after a growing delay (up to a minute), never given
    up on; any other failure of `restart` is logged with its traceback and tried again
    the same way (the supervision must not end)."""
    delays: Iterator[float] | None = None
    started = time.monotonic()
    told: subprocess.Popen[Any] | None = None  # the exit already logged (a restart failed)
    while True:
        await asyncio.sleep(interval_s)
        process = current()
        if process.poll() is None:  # poll() reaps a dead child
            continue
        delay = 0.0
        if time.monotonic() - started < QUICK_EXIT_S:
            delays = delays or backoff(1.0, 60.0)
            delay = next(delays)
        else:
            delays = None
        if process is not told:
            told = process
            log.error("%s exited: starting it again", what, extra={
                "worker_pid": process.pid, "returncode": process.returncode,
                "delay_s": round(delay, 1)})
        await asyncio.sleep(delay)
        started = time.monotonic()
        try:
            await restart()
        except (OSError, RuntimeError, TimeoutError) as err:
            log.error("%s could not be started: %s", what, err,
                      extra={"worker_pid": current().pid})
        except Exception:
            log.exception("%s could not be started", what, extra={"worker_pid": current().pid})


def die_with_parent(parent: int) -> None:
    """SIGTERM this child when ``parent`` (the pid that started it) dies, even by
    SIGKILL (Linux); exit at once if it is gone already.

    The signal follows the thread that started the child, so start children from a
    thread that lives as long as the process (the main thread). Set after the parent
    died, it never comes: a search process takes half a second to reach this call, and
    one whose worker was killed in that time stayed idle forever.
    """
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        os._exit(1)


def dying_with_parent(command: list[str]) -> list[str]:
    """``command`` wrapped so that it gets SIGTERM when this process dies, as with
    `die_with_parent`, but started without a preexec_fn (see the module docstring)."""
    return [sys.executable, "-m", "battleline_client.processes", str(os.getpid()), *command]


def main(argv: list[str]) -> None:
    """``python -m battleline_client.processes PARENT_PID COMMAND...``: the signal is set
    here and kept across exec (same process)."""
    parent, command = int(argv[0]), argv[1:]
    die_with_parent(parent)
    os.execvp(command[0], command)


def owner_options(owner: int | None) -> list[str]:
    """Redis's owner as decided (`--redis-owner`, else who held its port) as the options
    of a process a command starts (an engine of serve's, an AI, an AI worker)."""
    return [] if owner is None else ["--redis-owner", str(owner)]


if __name__ == "__main__":
    main(sys.argv[1:])
