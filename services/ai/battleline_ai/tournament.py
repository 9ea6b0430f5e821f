"""Bot against bot, in-process: many games over several processes, with statistics.

Games come in mirrored pairs: game ``2k`` and ``2k + 1`` deal the same cards
(seed ``seed + k``) with the bots in swapped seats, so each bot plays both
hands of every deal and both orders of play; the seat that moves first is
seat 0, so the bots also alternate who starts. Each bot sees only
``state.view(seat)``.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeGuard

from battleline_rules import new_game

from .bots import Bot, make_bot
from .processes import spawned_pool

Z95 = 1.959963984540054
# More actions than any game takes (a random game is about 124): a log line claiming more
# is not a game (10**400 of them overflowed the mean; fifteenth audit).
MOST_ACTIONS = 100_000
_BOTS: dict[str, Bot] = {}
# One game: (a, b, ruleset, seed of the run, game number, log file or None).
Job = tuple[str, str, str, int, int, str | None]


def _bot(spec: str) -> Bot:
    """One bot per spec per process (ISMCTS keeps a process pool when it has workers)."""
    if spec not in _BOTS:
        _BOTS[spec] = make_bot(spec)
    return _BOTS[spec]


def play_game(a: Bot, b: Bot, ruleset: str, seed: int, a_seat: int) -> tuple[int | None, int]:
    """Play one game; the winner as 0 (a), 1 (b) or None (draw), and the actions taken."""
    state = new_game(ruleset, None, seed)
    bots = (a, b) if a_seat == 0 else (b, a)
    rngs = [random.Random(seed * 2 + seat) for seat in (0, 1)]
    actions = 0
    while not state.is_over:
        seat = state.current_player
        state.apply(bots[seat].choose(state.view(seat), rngs[seat]))
        actions += 1
    if state.winner is None:
        return None, actions
    return (0 if state.winner == a_seat else 1), actions


def _job(job: Job) -> tuple[int | None, int]:
    a, b, ruleset, seed, game, log = job
    outcome = play_game(_bot(a), _bot(b), ruleset, seed + game // 2, game % 2)
    if log:
        # One line per finished game, so a run cut short still leaves its figures.
        line = {"a": a, "b": b, "ruleset": ruleset, "seed": seed, "game": game}
        line.update(winner=outcome[0], actions=outcome[1])
        with open(log, "a", encoding="utf-8") as out:
            out.write(json.dumps(line) + "\n")
    return outcome


def logged_games(
    log: Path, a: str, b: str, ruleset: str, seed: int
) -> dict[int, tuple[int | None, int]]:
    """The games of this run (same bots, ruleset and seed) a log already holds, by number.
    A log may come from someone else: a line that is not a logged game is a ValueError
    naming it (never a traceback), and a blank line (a log edited by hand) is skipped."""
    done: dict[int, tuple[int | None, int]] = {}
    if not log.exists():
        return done
    for number, line in enumerate(log.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        row = _logged_game(line)
        if row is None:
            raise ValueError(f"{log}:{number}: not a game of a tournament log")
        if (row["a"], row["b"], row.get("ruleset", "standard"), row["seed"]) == (
                a, b, ruleset, seed):
            done[row["game"]] = (row["winner"], row.get("actions", 0))
    return done


def _logged_game(line: str) -> dict[str, Any] | None:
    """One line of a log as `_job` writes it, or None if it is not one."""
    try:
        row = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(row, dict):
        return None
    fields_ok = (all(isinstance(row.get(k), str) for k in ("a", "b"))
                 and isinstance(row.get("ruleset", ""), str)
                 and _integer(row.get("seed")) and _natural(row.get("game"))
                 and _natural(row.get("actions", 0)) and row.get("actions", 0) <= MOST_ACTIONS
                 and row.get("winner", "missing") in (0, 1, None))
    return row if fields_ok else None


def _integer(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _natural(value: object) -> bool:
    return _integer(value) and value >= 0


@dataclass(frozen=True)
class Paired:
    """Two variants of bot A against the same B on the same deals (same seed): only the
    games one variant won and the other lost tell them apart."""

    games: int  # deals both played
    only_x: int  # won by X, lost by Y
    only_y: int  # won by Y, lost by X
    p_value: float  # two-sided exact sign test over the games they split


def paired(games_x: dict[int, tuple[int | None, int]],
           games_y: dict[int, tuple[int | None, int]]) -> Paired:
    """Compare two logged runs (`logged_games`) on the game numbers both played; a draw
    splits nothing. Far fewer games than two separate intervals need to tell a few
    points apart, since the luck of the deal is the same on both sides."""
    common = sorted(games_x.keys() & games_y.keys())
    only_x = sum(1 for g in common if games_x[g][0] == 0 and games_y[g][0] == 1)
    only_y = sum(1 for g in common if games_y[g][0] == 0 and games_x[g][0] == 1)
    n, k = only_x + only_y, min(only_x, only_y)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n if n else 1.0
    return Paired(len(common), only_x, only_y, min(1.0, 2 * tail))


def wilson(successes: float, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a proportion (draws count half a success)."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def elo(score: float) -> float:
    """Elo difference implied by an expected score (clamped to +-800 at 0 and 1)."""
    score = min(max(score, 0.01), 0.99)
    return -400.0 * math.log10(1.0 / score - 1.0)


@dataclass
class Result:
    a: str
    b: str
    ruleset: str
    games: int
    wins_a: int
    wins_b: int
    draws: int
    score_a: float
    ci: tuple[float, float]
    elo: float
    elo_ci: tuple[float, float]
    seed: int
    workers: int
    seconds: float
    actions_per_game: float

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def summary(self) -> str:
        lo, hi = self.ci
        return (
            f"{self.a} vs {self.b} ({self.ruleset}, {self.games} games): "
            f"{self.wins_a}-{self.wins_b}-{self.draws} (W-L-D); "
            f"{self.a} scores {self.score_a:.1%} [95% CI {lo:.1%}-{hi:.1%}]; "
            f"Elo {self.elo:+.0f} [{self.elo_ci[0]:+.0f}, {self.elo_ci[1]:+.0f}]; "
            f"{self.seconds:.0f} s"
        )


def run(
    a: str,
    b: str,
    games: int,
    ruleset: str = "standard",
    workers: int = 1,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
    log: Path | None = None,
) -> Result:
    """Play ``games`` games of ``a`` against ``b`` and summarise them.

    With a ``log``, every finished game is appended to it, and games of the
    same run it already holds are counted, not played again: a run cut short
    goes on where it stopped, in this session or a later one.
    """
    make_bot(a), make_bot(b)  # fail fast on bad specs, before starting processes
    start = time.perf_counter()
    done = logged_games(log, a, b, ruleset, seed) if log else {}
    outcomes = [done[g] for g in range(games) if g in done]
    path = str(log) if log else None
    jobs: list[Job] = [(a, b, ruleset, seed, g, path) for g in range(games) if g not in done]
    if workers > 1:
        with spawned_pool(workers) as pool:
            for outcome in pool.imap_unordered(_job, jobs):
                outcomes.append(outcome)
                if progress:
                    progress(len(outcomes), games)
    else:
        for job in jobs:
            outcomes.append(_job(job))
            if progress:
                progress(len(outcomes), games)
    wins_a = sum(1 for w, _ in outcomes if w == 0)
    wins_b = sum(1 for w, _ in outcomes if w == 1)
    draws = games - wins_a - wins_b
    score = (wins_a + 0.5 * draws) / games if games else 0.5
    ci = wilson(wins_a + 0.5 * draws, games)
    return Result(
        a=a,
        b=b,
        ruleset=ruleset,
        games=games,
        wins_a=wins_a,
        wins_b=wins_b,
        draws=draws,
        score_a=round(score, 4),
        ci=(round(ci[0], 4), round(ci[1], 4)),
        elo=round(elo(score), 1),
        elo_ci=(round(elo(ci[0]), 1), round(elo(ci[1]), 1)),
        seed=seed,
        workers=workers,
        seconds=round(time.perf_counter() - start, 1),
        actions_per_game=round(sum(n for _, n in outcomes) / max(games, 1), 1),
    )
