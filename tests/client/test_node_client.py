"""The Node.js client (clients/node, @grpc/grpc-js with the protos loaded at run time)
plays a complete match against a live engine started by the test."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from battleline_host.local import LocalService
from tests.ai.service_harness import WITH_AI, start_worker, stop

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
    done = subprocess.run(["node", str(NODE_DIR / "play.js"), "--target", service.address,
                           "--join", "no-such-invite"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "JoinMatch: NOT_FOUND invite-not-found:" in done.stderr, done.stderr
