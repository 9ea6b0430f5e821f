"""`battleline loadtest`: N bot-vs-bot matches, C at once, against an engine (or a local one)."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from battleline_rules import RULESETS

from . import options
from .server import needs_server


def loadtest(
    target: Annotated[str | None, typer.Option(
        callback=options.check_target,
        help="Engine host:port; without it a private `battleline serve` (embedded Redis, "
             "no per-peer limits) is started in a child process. An engine of yours counts "
             "this whole test as one client: start it with `serve --open-limits`.")] = None,
    matches: Annotated[int, typer.Option(min=1, help="Matches to play.")] = 100,
    concurrency: Annotated[int, typer.Option(min=1, help="Matches at once.")] = 20,
    mode: Annotated[str, typer.Option(
        help="local (one client, both seats) or joined (an open match joined by its "
             "invite code).")] = "local",
    ruleset: Annotated[str, typer.Option(help="standard, basic or deck52.")] = "standard",
    channels: Annotated[int, typer.Option(min=1, help="gRPC channels to spread over.")] = 4,
    json_path: Annotated[Path | None, typer.Option("--json", help="Write the report here.")] = None,
    png: Annotated[Path | None, typer.Option("--png", help="Write a latency histogram.")] = None,
    seed: Annotated[int, typer.Option(help="Bots' random seed.")] = 0,
) -> None:
    """Load-test an engine: matches/s, actions/s, latency percentiles per RPC, errors by code."""
    from ..hosting import ServeChild
    from ..loadtest import Report, histogram, run

    if mode not in ("local", "joined"):
        raise typer.BadParameter("local or joined", param_hint="--mode")
    if ruleset not in RULESETS:
        raise typer.BadParameter(", ".join(RULESETS), param_hint="--ruleset")
    if png is not None and importlib.util.find_spec("matplotlib") is None:
        raise typer.BadParameter("needs matplotlib: pip install 'battleline-client[plot]' "
                                 "(from a checkout: pip install './clients/python[plot]')",
                                 param_hint="--png")
    if target is None:
        needs_server("loadtest without --target")
    console = Console(highlight=False)
    service = None
    if target is None:
        service = ServeChild("--no-ai", "--open-limits")
        with console.status("starting a local engine..."):
            target = service.start()
        console.print(f"local engine on {target}")
    try:
        with Progress(TextColumn("[bold]matches"), BarColumn(), MofNCompleteColumn(),
                      TextColumn("{task.fields[info]}"), TimeElapsedColumn(),
                      console=console) as progress:
            task = progress.add_task("matches", total=matches, info="")
            so_far: list[Report] = []  # the run's report, for a Ctrl-C before its end

            def on_match(report: Report) -> None:
                so_far[:] = [report]
                failed = f"{report.failed} failed" if report.failed else ""
                progress.update(task, completed=report.completed + report.failed, info=failed)

            interrupted = False
            try:
                report = asyncio.run(run(target, matches, concurrency,
                                         mode="joined" if mode == "joined" else "local",
                                         ruleset=ruleset, channels=channels, seed=seed,
                                         on_match=on_match))
            except KeyboardInterrupt:  # what was measured so far is still reported
                if not so_far:
                    raise typer.Exit(130) from None
                report, interrupted = so_far[0], True
    finally:
        if service is not None:
            service.stop()
    data = report.to_json()
    if interrupted:
        console.print("interrupted: the matches finished so far")
    console.print(f"{data['matches_completed']} matches completed, {data['matches_failed']} "
                  f"failed in {data['duration_s']:.1f} s: {data['matches_per_s']:.2f} matches/s, "
                  f"{data['actions_per_s']:.1f} actions/s, {data['rpcs_per_s']:.1f} RPCs/s")
    table = Table("RPC", "calls", "p50 ms", "p90 ms", "p99 ms", "max ms")
    for method, row in data["latency_ms"].items():
        table.add_row(method, str(row["count"]), f"{row['p50']:.2f}", f"{row['p90']:.2f}",
                      f"{row['p99']:.2f}", f"{row['max']:.2f}")
    console.print(table)
    console.print(f"errors: {data['errors']} {data['errors_by_code'] or ''}")
    causes = data["failed_matches_by_cause"]
    if causes:
        console.print(f"failed matches by cause: {causes}")
    if any("rate-limited" in cause or "per-client" in cause for cause in causes):
        console.print("the target limits each client's calls and matches, and this load "
                      "test is one client: load-test an engine started with `battleline "
                      "serve --open-limits` (loopback only), or without --target")
    if json_path is not None:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    if png is not None:
        histogram(report, png)
    if interrupted:
        raise typer.Exit(130)
    if data["errors"] or data["matches_failed"]:
        raise typer.Exit(1)
