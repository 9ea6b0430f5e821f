"""`battleline tournament`: two bots, N games in-process, win rates with 95% CIs and Elo."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated

import typer

from battleline_rules import RULESETS


def tournament(
    a: Annotated[str, typer.Option("--a", help="bot spec, e.g. heuristic or ismcts:level=3")],
    b: Annotated[str, typer.Option("--b", help="the opponent's bot spec")],
    games: Annotated[int, typer.Option(min=1, help="games to play (in mirrored pairs)")] = 100,
    ruleset: Annotated[str, typer.Option(help="standard, basic or deck52")] = "standard",
    json_path: Annotated[Path | None, typer.Option("--json", help="write results here")] = None,
    workers: Annotated[int, typer.Option(min=1, help="processes playing games")] = 1,
    seed: Annotated[int, typer.Option(help="deal k of the run uses seed + k")] = 0,
    log: Annotated[
        Path | None,
        typer.Option(help="append each finished game here; games of this run already there count"),
    ] = None,
) -> None:
    """Play bot A against bot B and report who is stronger, with confidence intervals."""
    from battleline_ai.tournament import run

    if ruleset not in RULESETS:
        raise typer.BadParameter(f"use one of {', '.join(RULESETS)}", param_hint="--ruleset")
    try:
        for path in (log, json_path):  # both folders made now, not after hours of games
            if path is not None:
                path.parent.mkdir(parents=True, exist_ok=True)
        if json_path is not None and (json_path.is_dir()
                                      or not os.access(json_path.parent, os.W_OK)):
            raise typer.BadParameter(f"{json_path}: not a file this user may write",
                                     param_hint="--json")
        result = run(a, b, games, ruleset, workers, seed, log=log)
    except ValueError as error:
        raise typer.BadParameter(str(error)) from None
    except OSError as error:  # a --log that is a directory, unreadable, on a full disk
        raise typer.BadParameter(f"{error.filename}: {error.strerror}",
                                 param_hint="--log or --json") from None
    typer.echo(result.summary())
    if json_path is not None:
        json_path.write_text(json.dumps(result.to_json(), indent=2) + "\n", encoding="utf-8")
