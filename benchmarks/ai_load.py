"""The hosted AI with more matches than cores: `python benchmarks/ai_load.py [--quick]`.

Starts `battleline serve` as a user would (embedded Redis in a fresh data
dir, the hosted AI with `--ai-workers`), opens MATCHES matches against AI
level 5 at once, each on a per-move clock of CLOCK seconds, and plays the
other seat of every match with random legal moves through the client
library. From each finished match's record (commit times of its events) it
measures how long the AI took to answer each move.

Prints `name: value` lines: matches, finished, ai_moves, ai_late_moves
(answers slower than the clock), ai_timeouts (matches the AI lost on time),
ai_answer_s_p50 / p90 / max (to the AI's first action of a turn), ai_turn_s_p50 /
p90 / max (to its last: the draw, what the player waits for), wall_s, and cpu_cores.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from engine import start_listening

from battleline.v1 import types_pb2
from battleline_client.bots import choose
from battleline_client.client import Client
from battleline_client.common import answer_times, is_finished, is_my_turn, turn_times
from battleline_client.loadtest import percentile

BATTLELINE = str(Path(sys.executable).with_name("battleline"))


def start_serve(data_dir: Path, ai_workers: int, matches: int) -> tuple[subprocess.Popen[str], str]:
    return start_listening(
        [BATTLELINE, "serve", "--port", "0", "--no-web", "--grace", "1",
         "--data-dir", str(data_dir), "--ai-workers", str(ai_workers),
         # One client plays every human seat, polling each match 20 times a second: as
         # many people would, each from an address of its own.
         "--ai-matches-per-client", str(matches), "--call-rate", "1000000",
         "--log-level", "warning"], {})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="2 matches instead of 8")
    parser.add_argument("--clock", type=float, default=20.0, help="per-move clock, seconds")
    parser.add_argument("--ai-workers", type=int, default=2)
    args = parser.parse_args()
    matches = 2 if args.quick else 8
    rng = random.Random(1)
    with tempfile.TemporaryDirectory() as data:
        serve, address = start_serve(Path(data), args.ai_workers, matches)
        start = time.monotonic()
        try:
            with Client(address) as client:
                created = [
                    client.create(opponent="ai", ai_level=5, clock="per-move",
                                  clock_seconds=args.clock, seat="second")
                    for _ in range(matches)
                ]
                seats = [client.seat(c.seat) for c in created]
                open_seats = list(seats)
                while open_seats:
                    for seat in list(open_seats):
                        view = seat.view()
                        if is_finished(view):
                            open_seats.remove(seat)
                        elif is_my_turn(view):
                            seat.act(*choose(view, rng))
                    time.sleep(0.05)
                wall = time.monotonic() - start
                finals = [seat.view() for seat in seats]
                records = [client.record(c.match_id, c.seat.token) for c in created]
        finally:
            serve.terminate()
            serve.wait(60)
    ai = types_pb2.SEAT_FIRST
    gaps = sorted(g for r in records for g in answer_times(r, ai))
    turns = sorted(t for r in records for t in turn_times(r, ai))
    timeouts = sum(
        1 for v in finals if v.end_reason == types_pb2.END_REASON_TIMEOUT and v.winner != ai
    )
    print(f"matches: {matches}")
    print(f"finished: {sum(1 for v in finals if is_finished(v))}")
    print(f"ai_moves: {len(gaps)}")
    print(f"ai_late_moves: {sum(1 for g in gaps if g >= args.clock)}")
    print(f"ai_timeouts: {timeouts}")
    for name, values in (("ai_answer_s", gaps), ("ai_turn_s", turns)):
        print(f"{name}_p50: {statistics.median(values):.2f}")
        print(f"{name}_p90: {percentile(values, 90):.2f}")
        print(f"{name}_max: {values[-1]:.2f}")
    print(f"wall_s: {wall:.0f}")
    print(f"cpu_cores: {os.cpu_count()}")


if __name__ == "__main__":
    main()
