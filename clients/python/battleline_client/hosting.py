"""Where `play` and `loadtest` play when no --target is given: the running service, else
a `battleline serve` started here as a child process.

A first game must just work: the README starts `battleline serve` (engine on
127.0.0.1:50051 with hosted-AI workers), so `play` asks that address's gRPC
health service first. With nothing serving there, it starts `battleline serve`
itself (the same start-up code, hosted AI included, no web page), with its data,
the AI's key and its log in a private temporary directory, and stops it when the
game ends.

The server is another distribution (battleline-online): it adds `serve` and the
other server commands to `battleline` through the ``battleline.commands`` entry
points. This module only starts a process; it imports nothing of the server.
"""

from __future__ import annotations

import atexit
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from .processes import dying_with_parent, stop_processes

# Where an installed server registers its commands (`serve`, `ai`, `tournament`, `web`).
COMMANDS_GROUP = "battleline.commands"
SERVER_INSTALL = ("install battleline-online, the server (from a checkout: "
                  "`pip install -e clients/python -e .`)")


class ServerNotInstalled(RuntimeError):
    """What runs an engine, the hosted AI or the web gateway, where only the client
    distribution is installed."""


def server_plugins() -> list[EntryPoint]:
    """The installed distributions' additions to the `battleline` command."""
    return list(entry_points(group=COMMANDS_GROUP))


def require_server(what: str) -> None:
    """Raise ServerNotInstalled, saying what to install, unless a server distribution
    has registered its commands (looked up in the metadata, nothing imported)."""
    if not server_plugins():
        raise ServerNotInstalled(f"{what} needs the server, and only the client is "
                                 f"installed: {SERVER_INSTALL}")


def is_serving(target: str, timeout_s: float = 1.0) -> bool:
    """Whether an engine answers SERVING on ``target``'s gRPC health service."""
    with grpc.insecure_channel(target) as channel:
        stub: Any = health_pb2_grpc.HealthStub(channel)  # its methods are set at run time
        try:
            answer = stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=timeout_s)
        except grpc.RpcError:
            return False
    return bool(answer.status == health_pb2.HealthCheckResponse.SERVING)


class ServeChild:
    """`battleline serve --port 0 --no-web [options]` on loopback as a child process;
    `start()` returns its address. ``options`` are more of serve's options, e.g.
    ``--no-ai`` for a hot-seat game.

    Its output goes to ``serve.log`` in its private temporary data directory, not to
    the terminal the game is drawn on (its end is shown when serve does not start).
    """

    def __init__(self, *options: str) -> None:
        self.options = options
        self.process: subprocess.Popen[bytes] | None = None
        self.data_dir: Path | None = None  # made by start(), removed by stop()
        self.address = ""
        self._handlers: dict[int, Any] = {}  # this process's own, while serve runs

    def start(self, timeout_s: float = 60.0) -> str:
        """Start serve and wait until it prints the address it listens on. Interrupted
        (Ctrl-C, SIGTERM) or failed, it stops serve and removes its directory first."""
        require_server("a local engine")
        try:
            self._exit_on_termination()
            # And at the interpreter's exit, whatever ends it: a signal that lands after
            # this returns and before its caller's `try` (a re-test hit that window) too.
            atexit.register(self.stop)
            self.data_dir = Path(tempfile.mkdtemp(prefix="battleline-play-"))  # mode 0700
            log_path = self.data_dir / "serve.log"
            command = [sys.executable, "-m", "battleline_client.cli", "serve", "--port", "0",
                       "--host", "127.0.0.1", "--no-web", "--grace", "1", "--log-format",
                       "text", "--log-level", "warning", "--data-dir",
                       str(self.data_dir / "data"), *self.options]
            with open(log_path, "wb") as log:
                # A session of its own: the terminal's Ctrl-C is for `play`, which then
                # stops serve itself (SIGTERM) after closing its connection, not both at once.
                self.process = subprocess.Popen(dying_with_parent(command),
                                                stdin=subprocess.DEVNULL, stdout=log,
                                                stderr=subprocess.STDOUT, start_new_session=True)
            self.address = self._listening_address(self.process, log_path, timeout_s)
            return self.address
        except BaseException:
            self.stop()
            raise

    @staticmethod
    def _listening_address(process: subprocess.Popen[bytes], log_path: Path,
                           timeout_s: float) -> str:
        deadline = time.monotonic() + timeout_s
        marker = "battleline engine listening on "
        while time.monotonic() < deadline:
            for line in log_path.read_text(errors="replace").splitlines():
                if line.startswith(marker):
                    return line[len(marker):].strip()
            if process.poll() is not None:
                break
            time.sleep(0.1)
        tail = log_path.read_text(errors="replace")[-2000:]
        raise RuntimeError(f"battleline serve did not start:\n{tail}")

    def stop(self) -> None:
        """SIGTERM (serve stops its AI workers and Redis), SIGKILL after 20 s, or at once
        on a second Ctrl-C; then the temporary directory goes, however the wait ended."""
        try:
            if self.process is not None:
                try:
                    stop_processes(self.process, timeout_s=20)
                except BaseException:
                    self.process.kill()  # its Redis and AI go with it (dying_with_parent)
                    raise
                finally:
                    self.process = None
        finally:
            if self.data_dir is not None:
                shutil.rmtree(self.data_dir, ignore_errors=True)
                self.data_dir = None
            for signum, handler in self._handlers.items():
                if handler is not None:  # None: set outside Python, and left so
                    signal.signal(signum, handler)
            self._handlers.clear()
            atexit.unregister(self.stop)

    def _exit_on_termination(self) -> None:
        """While serve runs, SIGTERM and SIGHUP (the terminal closed) end this command
        with SystemExit, as Ctrl-C ends it with KeyboardInterrupt: by default they ended
        it at once, and the `finally` that stops serve and removes its directory (the
        AI's key, the store's files) never ran (an audit found 21 directories left)."""
        if threading.current_thread() is not threading.main_thread():
            return  # only the main thread may set handlers; its caller keeps the defaults
        for name in ("SIGTERM", "SIGHUP"):
            signum = getattr(signal, name, None)
            if signum is not None and signum not in self._handlers:
                self._handlers[signum] = signal.signal(signum, _exit_by_signal)

    def __enter__(self) -> ServeChild:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _exit_by_signal(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)
