"""`battleline review MATCH_ID` against a real engine and AI service: the moves table,
the text graph and the costliest moves of a finished match; a precise error for a
match still being played or unknown."""

from __future__ import annotations

import asyncio
import re

from rich.console import Console
from typer.testing import CliRunner

from battleline.v1 import types_pb2
from battleline_client.aio import AsyncClient
from battleline_client.cli import app
from battleline_client.client import Client
from battleline_client.commands.review import BARS, render, sparkline
from battleline_host.local import LocalService
from tests.ai.service_harness import played_match

runner = CliRunner()


def test_sparkline_maps_estimates_to_bars() -> None:
    assert sparkline([0.0, 0.5, 1.0]) == BARS[0] + BARS[4] + BARS[-1]
    assert sparkline([]) == ""


def test_review_prints_moves_graph_and_costliest_moves(ai_engine: LocalService) -> None:
    with Client(ai_engine.address, timeout=60) as client:
        match_id = played_match(client, seed=1506)
        live = client.create(opponent="local", clock="none").match_id
        review = client.review(match_id).review
    result = runner.invoke(app, ["review", match_id, "--target", ai_engine.address],
                           terminal_width=120)
    assert result.exit_code == 0, result.output
    out = result.output
    print(out[-1500:])
    assert "Every move of game 1" in out and "Win estimate over the game" in out
    rows = re.findall(r"^│\s*(\d+)\s*│", out, re.MULTILINE)
    assert [int(n) for n in rows] == [m.number for m in review.moves]
    for seat in ("first seat", "second seat"):
        graph = next(line for line in out.splitlines() if line.strip().startswith(seat))
        assert re.search(f"[{BARS}]{{5,}}", graph), graph
    assert review.costliest, "a random game has costly moves"
    assert "The costliest moves:" in out
    for number in review.costliest:
        move = review.moves[number - 1]
        assert f"move {number}, " in out and move.preferred_action in out
        # What the preferred move was worth is said, not only the difference (a fresh
        # user read "39% -> 39%; ... 29.3 points better" as a contradiction).
        worth = f"{move.preferred_action} (-> {100 * (move.estimate_after + move.loss):.0f}%, "
        assert worth in " ".join(out.split()), worth

    async def review_async() -> list[str]:  # the asyncio client reads the same review
        async with AsyncClient(ai_engine.address, timeout=60) as aclient:
            answer = await aclient.review(match_id)
        return [move.preferred_action for move in answer.review.moves]

    assert asyncio.run(review_async()) == [move.preferred_action for move in review.moves]

    # Each seat by its player's name (a player read "first"/"second" and could not tell).
    console = Console(width=120, record=True)
    console.print(render(review, {types_pb2.SEAT_FIRST: "Ann", types_pb2.SEAT_SECOND: "Bob"}))
    named = console.export_text()
    assert "Ann (ends" in named and "Bob (ends" in named
    assert re.search(r"│\s*1\s*│\s*(Ann|Bob)\s*│", named), named[:600]

    refused = runner.invoke(app, ["review", live, "--target", ai_engine.address])
    assert refused.exit_code == 1 and "over" in refused.output
    unknown = runner.invoke(app, ["review", "no-such-match", "--target", ai_engine.address])
    assert unknown.exit_code == 1 and "no match" in unknown.output
