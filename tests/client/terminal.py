"""Driving `battleline` in a pseudo-terminal (pexpect) from a clean process.

The pytest process runs engines and clients on gRPC threads; forking it for a
pty while those threads are busy can break the child before it execs (gRPC's
fork handlers are skipped and it dies with an epoll error). So the pty child
is forked from a freshly spawned interpreter that has never started gRPC.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from dataclasses import dataclass
from multiprocessing.pool import AsyncResult, Pool

import pexpect

MOVE = r"your move \(1-\d+"
PASS = r"press Enter when the other seat is not looking"  # a hot seat changes hands
# To the line's end: the line may reach the pty in pieces, and a pattern free to stop
# anywhere would match only the first piece.
OVER = r"match over: [^\r\n]*\r?\n"


@dataclass(frozen=True)
class Session:
    """How a terminal session went."""

    prompts: int  # move prompts answered
    result: str  # the "match over: ..." line, or ""
    exitstatus: int | None
    output: str  # the end of what the terminal showed


def _session(command: list[str], answer: bool, timeout_s: float,
             log_path: str | None = None, temp_dir: str | None = None) -> Session:
    child = pexpect.spawn(command[0], command[1:], encoding="utf-8", timeout=30,
                          dimensions=(60, 160), env=terminal_env(temp_dir))
    if log_path is not None:  # what the terminal shows, as it comes (line-buffered)
        child.logfile_read = open(log_path, "w", buffering=1, encoding="utf-8")  # noqa: SIM115
    prompts, result, seen = 0, "", []
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            index = child.expect([MOVE, OVER, pexpect.EOF, PASS])
            seen.append(child.before or "")
            if index == 0 and answer:
                child.sendline("1")
                prompts += 1
            elif index == 1:
                result = str(child.after).rstrip()
            elif index == 2:
                break
            elif index == 3:
                child.sendline("")
        child.close()
        return Session(prompts, result, child.exitstatus, "".join(seen)[-12000:])
    finally:
        if child.isalive():
            child.terminate(force=True)


def terminal_env(temp_dir: str | None = None) -> dict[str, str]:
    """The command's environment: a wide terminal, and with `temp_dir` its temporary
    files (an engine `play` starts keeps its data there) where a test can tell its own
    processes from those of tests running beside it."""
    return {**os.environ, "COLUMNS": "160", **({"TMPDIR": temp_dir} if temp_dir else {})}


def start(command: list[str], *, answer: bool = True, timeout_s: float = 120,
          log_path: str | None = None,
          temp_dir: str | None = None) -> tuple[Pool, AsyncResult[Session]]:
    """Start a session in a clean process; `.get()` the result, then close the pool.
    With `log_path`, the terminal's output is written there as it comes."""
    pool = multiprocessing.get_context("spawn").Pool(1)
    return pool, pool.apply_async(_session, (command, answer, timeout_s, log_path, temp_dir))


def run(command: list[str], *, answer: bool = True, timeout_s: float = 120) -> Session:
    """Run a session to its end: answer every move prompt with "1" if `answer`."""
    pool, pending = start(command, answer=answer, timeout_s=timeout_s)
    with pool:
        return pending.get(timeout_s + 30)


def default_signals() -> None:
    """Ctrl-C and a closed terminal as a terminal's user has them: a test run started in
    the background (`nohup .ci/run &`) ignores SIGINT and SIGHUP, and so would the
    command, which then never sees them."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def _left(command: list[str], after: str, hang_up: bool) -> Session:
    child = pexpect.spawn(command[0], command[1:], encoding="utf-8", timeout=30,
                          dimensions=(60, 160), env=terminal_env(),
                          preexec_fn=default_signals)
    try:
        child.expect(after)
        seen = [child.before or "", str(child.after)]
        if hang_up:
            child.kill(signal.SIGHUP)
        else:
            child.sendintr()
        child.expect(pexpect.EOF)
        seen.append(child.before or "")
        child.close()
        return Session(0, "", child.exitstatus, "".join(seen)[-12000:])
    finally:
        if child.isalive():
            child.terminate(force=True)


def interrupt(command: list[str], after: str, *, hang_up: bool = False) -> Session:
    """Run a session until the terminal shows `after` (a pattern), then press Ctrl-C (or,
    with `hang_up`, close the terminal: SIGHUP)."""
    pool = multiprocessing.get_context("spawn").Pool(1)
    with pool:
        return pool.apply_async(_left, (command, after, hang_up)).get(90)
