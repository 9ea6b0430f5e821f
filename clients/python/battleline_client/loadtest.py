"""The load tester behind `battleline loadtest`: N bot-vs-bot matches, C at once.

Every RPC goes through the asyncio client, whose call observer feeds the
latency samples and the error counts here, so what is measured is exactly
what a client sees (including the client's own retries). Matches are LOCAL
(one client holds both seats) or "joined" (an OPEN match created by one
client and joined by its invite code by another, the way two remote players meet).
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import grpc

from .aio import AsyncClient
from .bots import Finished, aplay_joined, aplay_local
from .client import CHANNEL_OPTIONS
from .errors import BattleLineError

Mode = Literal["local", "joined"]
PERCENTILES = (50, 90, 95, 99)


def percentile(sorted_values: list[float], p: float) -> float:
    """Nearest-rank percentile of already sorted values (0 for none)."""
    if not sorted_values:
        return 0.0
    rank = max(1, math.ceil(p / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


@dataclass
class Stats:
    """Latency samples per RPC and errors per status code, filled by the call observer."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: Counter[str] = field(default_factory=Counter)
    match_errors: Counter[str] = field(default_factory=Counter)  # what ended a failed match
    other_errors: int = 0  # failures that were not an RPC status (a bot or protocol bug)

    def observe(self, method: str, seconds: float, code: grpc.StatusCode) -> None:
        self.latencies[method].append(seconds)
        if code != grpc.StatusCode.OK:
            self.errors[code.name] += 1


@dataclass
class Report:
    """What a run measured; `to_json()` is the --json file."""

    target: str
    mode: str
    matches: int
    concurrency: int
    completed: int = 0
    failed: int = 0
    requests: int = 0
    actions: int = 0
    seconds: float = 0.0
    stats: Stats = field(default_factory=Stats)

    def latency_ms(self) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for method, values in sorted(self.stats.latencies.items()):
            ordered = sorted(values)
            row = {f"p{p}": round(percentile(ordered, p) * 1000, 3) for p in PERCENTILES}
            row["max"] = round(ordered[-1] * 1000, 3)
            row["mean"] = round(sum(ordered) / len(ordered) * 1000, 3)
            row["count"] = len(ordered)
            out[method] = row
        return out

    def to_json(self) -> dict[str, Any]:
        seconds = max(self.seconds, 1e-9)
        calls = sum(len(v) for v in self.stats.latencies.values())
        return {
            "target": self.target, "mode": self.mode, "matches": self.matches,
            "concurrency": self.concurrency, "matches_completed": self.completed,
            "matches_failed": self.failed, "actions": self.actions,
            "submit_requests": self.requests, "rpc_calls": calls,
            "duration_s": round(self.seconds, 3),
            "matches_per_s": round(self.completed / seconds, 3),
            "actions_per_s": round(self.actions / seconds, 3),
            "rpcs_per_s": round(calls / seconds, 3),
            "errors": sum(self.stats.errors.values()) + self.stats.other_errors,
            "errors_by_code": dict(self.stats.errors),
            "failed_matches_by_cause": dict(self.stats.match_errors),
            "latency_ms": self.latency_ms(),
        }


async def run(target: str, matches: int, concurrency: int, *, mode: Mode = "local",
              ruleset: str = "standard", channels: int = 4, seed: int = 0,
              on_match: Callable[[Report], None] | None = None) -> Report:
    """Play `matches` matches, at most `concurrency` at once, over `channels` channels."""
    report = Report(target, mode, matches, concurrency)
    # A subchannel pool of each channel's own: gRPC shares one connection between channels
    # of the same settings, and `--channels 4` held one connection, all on one engine
    # process of `serve --workers 2`.
    clients = [AsyncClient(target, observer=report.stats.observe, timeout=30,
                           channel=grpc.aio.insecure_channel(
                               target, [*CHANNEL_OPTIONS, ("grpc.use_local_subchannel_pool", 1)]))
               for _ in range(max(1, channels))]
    queue: asyncio.Queue[int] = asyncio.Queue()
    for n in range(matches):
        queue.put_nowait(n)

    async def one(n: int) -> Finished:
        rng = random.Random(seed * 1_000_003 + n)
        host = clients[n % len(clients)]
        if mode == "local":
            return await aplay_local(host, rng, ruleset=ruleset)
        guest = clients[(n + 1) % len(clients)]
        return await aplay_joined(host, guest, rng, ruleset=ruleset)

    async def worker() -> None:
        while not queue.empty():
            n = queue.get_nowait()
            try:
                done = await one(n)
            except BattleLineError as err:  # its call is already in stats.errors
                report.failed += 1
                report.stats.match_errors[f"{err.code.name} {err.reason}".strip()] += 1
            except Exception as err:  # a bot or protocol bug: count it, keep going
                report.failed += 1
                report.stats.match_errors[type(err).__name__] += 1
                report.stats.other_errors += 1
            else:
                report.completed += 1
                report.requests += done.requests
                report.actions += done.actions
            if on_match is not None:
                on_match(report)

    start = time.perf_counter()
    try:
        await asyncio.gather(*(worker() for _ in range(min(concurrency, matches))))
    finally:
        report.seconds = time.perf_counter() - start
        for client in clients:
            await client.close()
    return report


def histogram(report: Report, path: Path) -> None:
    """A PNG of the latency distribution of each RPC (log-scaled milliseconds)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 5), dpi=110)
    series = {m: [v * 1000 for v in vs] for m, vs in sorted(report.stats.latencies.items()) if vs}
    if series:
        low = max(0.05, min(min(v) for v in series.values()))
        high = max(max(v) for v in series.values()) * 1.05
        bins = [low * (high / low) ** (i / 60) for i in range(61)]
        for method, values in series.items():
            p99 = percentile(sorted(values), 99)
            ax.hist(values, bins=bins, histtype="step", linewidth=1.6,
                    label=f"{method} (n={len(values)}, p99 {p99:.1f} ms)")
        ax.set_xscale("log")
        ax.legend(fontsize=8)
    data = report.to_json()
    ax.set_xlabel("latency (ms, log scale)")
    ax.set_ylabel("calls")
    ax.set_title(f"battleline loadtest: {data['matches_completed']} matches, "
                 f"concurrency {report.concurrency}, {data['actions_per_s']:.0f} actions/s, "
                 f"{data['errors']} errors", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
