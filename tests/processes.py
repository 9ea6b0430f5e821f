"""`battleline serve` as a child process, and the /proc lookups the tests make of it.

Why one module: the serve, AI, concurrency, deployment and browser tests all start
the real command and wait for the address it prints, and some check which
processes it left behind; they do it the same way.
"""

from __future__ import annotations

import contextlib
import errno
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import IO

BATTLELINE = str(Path(sys.executable).parent / "battleline")
EMBEDDED_STORE = "valkey-server"  # the process name of serve's embedded Redis
# Where the serves of a test run keep what they write beside no --data-dir (was: the
# checkout); gone at exit.
SERVE_FOLDERS = tempfile.TemporaryDirectory(prefix="battleline-serves-")


def free_port() -> int:
    """A currently free loopback TCP port (the OS picks it), for a test's own servers."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def free_port_pair() -> int:
    """A port p with p and p + 1 free, below Linux's ephemeral range (32768 and up), so
    no outgoing connection of this busy machine takes either before serve binds them."""
    while True:
        port = random.randrange(20000, 32000)
        try:
            with socket.socket() as first, socket.socket() as second:
                first.bind(("127.0.0.1", port))
                second.bind(("127.0.0.1", port + 1))
            return port
        except OSError:
            continue


def taken_on(loopback: str, port: int) -> bool:
    """Whether another listener could not bind `loopback`:`port` now."""
    with socket.socket(socket.AF_INET6 if ":" in loopback else socket.AF_INET) as other:
        other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            other.bind((loopback, port))
            other.listen()
        except OSError as err:
            return err.errno == errno.EADDRINUSE
    return False


def start_serve(*args: str, env: dict[str, str] | None = None,
                stderr: int | IO[str] = subprocess.DEVNULL) -> tuple[subprocess.Popen[str], str]:
    """Start `battleline serve --port 0 --grace 1 ARGS` and return it with its gRPC address.

    Returns once serve has printed the address it listens on. Its stdout stays a
    pipe, so `web_url` can read the page's address printed next. It runs in a folder of
    its own, where a serve given no --data-dir keeps its data (was: the checkout's).
    """
    process = subprocess.Popen(
        [BATTLELINE, "serve", "--port", "0", "--grace", "1", *args],
        stdout=subprocess.PIPE, stderr=stderr, text=True, env={**os.environ, **(env or {})},
        cwd=tempfile.mkdtemp(prefix="serve-", dir=SERVE_FOLDERS.name),
    )
    assert process.stdout is not None
    line = process.stdout.readline()  # blocks until serve listens (or exits)
    if "listening on" not in line:
        process.kill()
        try:
            _, err = process.communicate(timeout=10)
        except subprocess.TimeoutExpired:  # a child of serve still holds the pipes
            err = ""
        raise AssertionError(f"serve did not start: {line!r} {err or ''}")
    return process, line.rsplit(" ", 1)[1].strip()


def web_url(process: subprocess.Popen[str]) -> str:
    """The web page's URL, which serve prints after the engine's address."""
    assert process.stdout is not None
    for _ in range(5):  # the hosted AI's child process prints to the same stdout
        line = process.stdout.readline()
        if line.startswith("battleline web page at "):
            return line.rsplit(" ", 1)[1].strip()
    raise AssertionError("serve printed no web page address")


def stop_serve(process: subprocess.Popen[str], timeout: float = 20) -> str:
    """SIGTERM (a graceful stop) and wait, killing it if it hangs; its stderr if piped."""
    process.send_signal(signal.SIGTERM)
    try:
        _, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        _, err = process.communicate()
    return err or ""


def children(pid: int) -> list[int]:
    """The direct children of `pid` (from /proc; none once it is gone)."""
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):
                found += [int(c) for c in (task / "children").read_text().split()]
    return found


def descendants(pid: int) -> list[int]:
    """Children, grandchildren, ... of `pid`."""
    found: list[int] = []
    todo = children(pid)
    while todo:
        child = todo.pop()
        found.append(child)
        todo += children(child)
    return found


def command_line(pid: int) -> list[str]:
    """The arguments `pid` was started with ([] once it is gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_text().split("\0")
    except OSError:
        return []


def is_alive(pid: int) -> bool:
    """Running (a zombie counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def alive_after(pids: list[int], seconds: float) -> list[int]:
    """Those of `pids` still running once all have ended or `seconds` have passed."""
    deadline = time.monotonic() + seconds
    while (alive := [pid for pid in pids if is_alive(pid)]) and time.monotonic() < deadline:
        time.sleep(0.1)
    return alive


def calls_served(metrics_port: int) -> int:
    """RPCs (health checks left out) one engine process has answered, from its /metrics."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics",
                                  timeout=5).read().decode()
    return int(sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                   if line.startswith("battleline_rpc_latency_seconds_count{")
                   and "grpc.health" not in line))
