"""Two variants of a bot against the same opponent on the same deals, from their logs.

    python benchmarks/paired.py LOG_X SPEC_X LOG_Y SPEC_Y --b prob --seed 7000

Each log is a `battleline tournament --log` file; the games both runs played are
compared deal by deal (an exact sign test over the deals one variant won and the
other lost). Prints `name: value` lines.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from battleline_ai.tournament import logged_games, paired, wilson


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log_x", type=Path)
    parser.add_argument("spec_x")
    parser.add_argument("log_y", type=Path)
    parser.add_argument("spec_y")
    parser.add_argument("--b", required=True, help="the opponent both played")
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--ruleset", default="standard")
    parser.add_argument("--quick", action="store_true", help="accepted for symmetry; no effect")
    args = parser.parse_args()
    games_x = logged_games(args.log_x, args.spec_x, args.b, args.ruleset, args.seed)
    games_y = logged_games(args.log_y, args.spec_y, args.b, args.ruleset, args.seed)
    result = paired(games_x, games_y)
    common = games_x.keys() & games_y.keys()
    for name, games in (("x", games_x), ("y", games_y)):
        wins = sum(1 for g in common if games[g][0] == 0)
        low, high = wilson(wins, len(common))
        print(f"{name}_score: {wins / max(1, len(common)):.3f} [{low:.3f}-{high:.3f}]")
    print(f"games: {result.games}")
    print(f"only_x: {result.only_x}")
    print(f"only_y: {result.only_y}")
    print(f"sign_test_p: {result.p_value:.3f}")


if __name__ == "__main__":
    main()
