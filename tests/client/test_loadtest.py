"""`battleline loadtest` with a small N against a live engine: JSON and PNG, zero errors."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from battleline_client.cli import app
from battleline_client.loadtest import percentile
from battleline_engine.ratelimit import Rate
from battleline_engine.runtime import EngineConfig
from battleline_host.local import LocalService
from tests.client import terminal
from tests.processes import BATTLELINE, calls_served, free_port_pair, start_serve, stop_serve


def test_loadtest_writes_json_and_png_with_zero_errors(service: LocalService,
                                                       tmp_path: Path) -> None:
    out, png = tmp_path / "load.json", tmp_path / "load.png"
    result = CliRunner().invoke(app, ["loadtest", "--target", service.address, "--matches", "6",
                                      "--concurrency", "3", "--json", str(out), "--png",
                                      str(png)])
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["matches_completed"] == 6 and data["errors"] == 0
    assert data["actions"] > 6 * 20
    for rpc in ("CreateMatch", "GetView", "SubmitAction"):
        row = data["latency_ms"][rpc]
        assert 0 < row["p50"] <= row["p90"] <= row["p99"] <= row["max"]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_loadtest_joined_mode_meets_through_the_lobby(service: LocalService,
                                                      tmp_path: Path) -> None:
    out = tmp_path / "joined.json"
    result = CliRunner().invoke(app, ["loadtest", "--target", service.address, "--matches", "3",
                                      "--concurrency", "3", "--mode", "joined", "--json",
                                      str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["matches_completed"] == 3 and data["errors"] == 0
    assert data["latency_ms"]["JoinMatch"]["count"] == 3


def test_a_limited_target_names_the_limit_and_the_way_round_it(redis_url: str) -> None:
    """Against a serve with its per-client limits an operator's load test failed 39 of 40
    matches with `RESOURCE_EXHAUSTED: 373` and no word of why."""
    limited = dataclasses.replace(EngineConfig(), call_rate=Rate(0.01, 10))  # no retry
    with LocalService(redis_url, config=limited) as engine:
        result = CliRunner().invoke(app, ["loadtest", "--target", engine.address,
                                          "--matches", "4", "--concurrency", "4"])
    assert result.exit_code == 1, result.output
    assert "RESOURCE_EXHAUSTED rate-limited" in result.output
    assert "serve --open-limits" in result.output


@pytest.mark.timeout(90)
def test_each_channel_is_a_connection_of_its_own(redis_url: str) -> None:
    """`--channels 4` held one connection (gRPC shares one between channels of the same
    settings), so a `serve --workers 2` under load served it from one process."""
    metrics_port = free_port_pair()
    process, address = start_serve(
        "--no-web", "--no-ai", "--open-limits", "--workers", "2",
        "--metrics-port", str(metrics_port), env={"REDIS_URL": redis_url})
    try:
        result = CliRunner().invoke(app, ["loadtest", "--target", address, "--matches", "16",
                                          "--concurrency", "16", "--channels", "16"])
        assert result.exit_code == 0, result.output
        served = [calls_served(metrics_port), calls_served(metrics_port + 1)]
    finally:
        stop_serve(process)
    assert min(served) > 0, served  # 16 connections all on one process: 1 in 32,768


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == 50 and percentile(values, 99) == 99
    assert percentile(values, 100) == 100 and percentile([], 50) == 0


def test_loadtest_without_target_starts_its_own_engine(tmp_path: Path) -> None:
    """Its own `battleline serve --open-limits`: 30 matches created at once, past a public
    engine's creation burst (20), and every action at full speed, with no refusal."""
    out = tmp_path / "own.json"
    result = CliRunner().invoke(app, ["loadtest", "--matches", "30", "--concurrency", "30",
                                      "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert "local engine on 127.0.0.1:" in result.output
    report = json.loads(out.read_text())
    assert report["matches_completed"] == 30 and report["errors"] == 0, report["errors_by_code"]


def test_open_limits_serve_loopback_only() -> None:
    refused = CliRunner().invoke(app, ["serve", "--open-limits", "--host", "0.0.0.0", "--no-ai",
                                       "--no-web", "--redis-url", "redis://127.0.0.1:1/0"])
    assert refused.exit_code == 2, refused.output
    assert "--open-limits serves loopback only" in refused.output


def test_a_run_stopped_with_ctrl_c_reports_what_it_measured(service: LocalService) -> None:
    """Ctrl-C printed nothing and wrote no JSON: an operator bounding a run by hand lost it."""
    session = terminal.interrupt(
        [BATTLELINE, "loadtest", "--target", service.address, "--matches", "5000",
         "--concurrency", "4"], after=r"\b[1-9]\d*/5000")
    assert session.exitstatus == 130, session.output
    assert "interrupted: the matches finished so far" in session.output
    assert re.search(r"[1-9]\d* matches completed", session.output), session.output
