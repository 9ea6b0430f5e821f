"""The Go client (clients/go): its stubs generated from protos/ by clients/go/build.sh and
built offline with Debian's Go packages (scripts/install_test_tools.sh installs them; no
skip: CI must build it), it plays a whole match against the hosted AI of a live engine."""

from __future__ import annotations

import dataclasses
import re
import subprocess
from pathlib import Path

import pytest

from battleline_engine.ratelimit import Rate
from battleline_host.local import LocalService
from tests.ai.service_harness import WITH_AI, start_worker, stop

GO_DIR = Path(__file__).resolve().parents[2] / "clients" / "go"
RESULT = re.compile(r"match over: winner (SEAT_\w+) by (END_REASON_\w+) after (\d+) requests, "
                    r"(\d+) sent again")


@pytest.fixture(scope="module")
def go_bot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bot, built once from freshly generated stubs."""
    out = tmp_path_factory.mktemp("go")
    built = subprocess.run(["sh", str(GO_DIR / "build.sh"), str(out)], capture_output=True,
                           text=True, timeout=600)
    assert built.returncode == 0, (
        f"clients/go/build.sh failed (scripts/install_test_tools.sh installs Go and its "
        f"gRPC packages):\n{built.stdout}{built.stderr}")
    return out / "battleline-bot"


def _bot(go_bot: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(go_bot), *args], capture_output=True, text=True, timeout=240)


def test_go_bot_plays_a_match_against_the_hosted_ai(go_bot: Path, redis_url: str,
                                                   tmp_path: Path) -> None:
    """At 4 actions a second per seat (burst 2) a bot that moves at once is refused
    `rate-limited` many times a game: it waits out each RetryInfo delay and plays on (it
    exited 1 at the first refusal)."""
    config = dataclasses.replace(WITH_AI, action_rate=Rate(per_s=4.0, burst=2))
    with LocalService(redis_url, config=config) as engine:
        worker = start_worker(engine.address, redis_url, tmp_path / "worker.log")
        try:
            done = _bot(go_bot, "--target", engine.address, "--ai", "3", "--timeout", "200s")
        finally:
            stop(worker)
    print(done.stdout)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "against the hosted AI level 3" in done.stdout
    found = RESULT.search(done.stdout)
    assert found, done.stdout
    # A game played out to its end, not abandoned: no resignation, no clock run out.
    assert found.group(2) in ("END_REASON_BREAKTHROUGH", "END_REASON_ENVELOPMENT",
                              "END_REASON_FLANKS", "END_REASON_DRAW", "END_REASON_STALEMATE")
    assert int(found.group(3)) > 5
    assert int(found.group(4)) > 0, "the rate refusals were waited out"


def test_go_bot_reports_a_refusal_with_its_status(go_bot: Path, redis_url: str) -> None:
    with LocalService(redis_url) as engine:  # no hosted AI: refused at once
        done = _bot(go_bot, "--target", engine.address, "--ai", "3", "--timeout", "30s")
    assert done.returncode == 1
    assert "CreateMatch: rpc error: code = FailedPrecondition" in done.stderr, done.stderr
    assert "no hosted AI" in done.stderr, done.stderr
