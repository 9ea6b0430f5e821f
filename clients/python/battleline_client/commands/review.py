"""`battleline review MATCH_ID`: the hosted AI's review of a finished match in the terminal.

Every move with its mover's win estimate before and after it and the move the
AI preferred, a text graph of each seat's estimate over the game, and the
moves that cost most. The engine computes the review once the match is over
(RecordService.GetReview) and keeps it; each estimate is made from what the
mover knew at that moment.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Annotated

import typer
from rich.console import Console, Group, RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from battleline.v1 import review_pb2, types_pb2

from .. import tui
from ..client import Client
from ..common import DEFAULT_TARGET
from ..errors import BattleLineError
from . import options

SEATS: Mapping[int, str] = {types_pb2.SEAT_FIRST: "first seat",
                            types_pb2.SEAT_SECOND: "second seat"}
SEAT_STYLES: Mapping[int, str] = {types_pb2.SEAT_FIRST: "cyan", types_pb2.SEAT_SECOND: "magenta"}
BARS = "▁▂▃▄▅▆▇█"
# The engine makes the review on the first ask: about a second, more behind a queue.
REVIEW_TIMEOUT_S = 90.0
# A game has at most about 300 moves (every card played and drawn, claims, Scout's steps).
MOST_MOVES = 600


def percent(value: float) -> str:
    return f"{100 * value:.0f}%"


def sparkline(values: Sequence[float]) -> str:
    """Estimates in [0, 1] as one bar each, from ▁ (0) to █ (1)."""
    top = len(BARS) - 1
    return "".join(BARS[min(top, max(0, round(v * top)))] for v in values)


def graph(review: review_pb2.GameReview, width: int = 60,
          names: Mapping[int, str] = SEATS) -> Table:
    """Each seat's estimate after each of its moves, as a line of bars (at most
    ``width`` per line: a long game wraps)."""
    table = Table(title="Win estimate over the game (each bar: one move, ▁ 0% to █ 100%)",
                  show_header=False, box=None, title_justify="left")
    table.add_column("seat", no_wrap=True)
    table.add_column("graph", no_wrap=True)
    for seat in SEATS:
        values = [m.estimate_after for m in review.moves if m.seat == seat]
        line = sparkline(values)
        rows = [line[i:i + width] for i in range(0, len(line), width)] or [""]
        label = names[seat] + (f" (ends {percent(values[-1])})" if values else "")
        for i, row in enumerate(rows):
            table.add_row(label if i == 0 else "", Text(row, style=SEAT_STYLES[seat]))
    return table


def moves_table(review: review_pb2.GameReview, names: Mapping[int, str] = SEATS) -> Table:
    """Every move: who, what, the estimate before and after, the AI's preference."""
    costly = set(review.costliest)
    table = Table(title=f"Every move of game {review.game}", title_justify="left")
    for name in ("#", "seat", "move", "before", "after", "AI preferred", "loss"):
        table.add_column(name, justify="left" if name in ("seat", "move", "AI preferred")
                         else "right")
    for m in review.moves:
        preferred = "" if m.preferred_action in ("", m.action) else m.preferred_action
        table.add_row(
            str(m.number), Text(names.get(m.seat, "?"), style=SEAT_STYLES.get(m.seat, "")),
            Text(m.action), percent(m.estimate_before), percent(m.estimate_after),
            Text(preferred),
            f"{100 * m.loss:.1f}" if m.loss else "",
            style="bold red" if m.number in costly else None)
    return table


def costliest(review: review_pb2.GameReview, names: Mapping[int, str] = SEATS) -> RenderableType:
    """The moves that cost most, each with the move the AI preferred."""
    # Moves are numbered from 1; a number the review lacks (a broken server's) is left out.
    # Each once, at most ten (the AI lists three): a broken server's million repeats are not drawn.
    numbers = list(dict.fromkeys(n for n in review.costliest if 1 <= n <= len(review.moves)))[:10]
    if not numbers:
        return Text("No costly move: every judged move was the AI's choice or close to it.")
    lines = [Text("The costliest moves:", style="bold")]
    for number in numbers:
        m = review.moves[number - 1]
        lines.append(Text(
            f"  move {m.number}, {names.get(m.seat, '?')}: {m.action} "
            f"({percent(m.estimate_before)} -> {percent(m.estimate_after)}); the AI preferred "
            f"{m.preferred_action} (-> {percent(m.estimate_after + m.loss)}, "
            f"{100 * m.loss:.1f} points more)"))
    return Group(*lines)


def drawable(review: review_pb2.GameReview) -> review_pb2.GameReview:
    """A copy of `review` cut to what a game holds, its strings to `tui.MOST_TEXT`, its
    numbers to their range: a hostile server's 3 MB review kept `review` drawing for tens
    of seconds (thirteenth audit), a NaN estimate ended it with a traceback (fourteenth)."""
    cut = review_pb2.GameReview()
    cut.CopyFrom(review)
    del cut.moves[MOST_MOVES:]
    tui.clip_texts(cut)
    for move in cut.moves:  # estimates are chances, a loss their difference: NaN is none
        move.estimate_before = _within(move.estimate_before, 0.0)
        move.estimate_after = _within(move.estimate_after, 0.0)
        move.loss = _within(move.loss, -1.0)
    return cut


def _within(value: float, low: float) -> float:
    """`value` in [low, 1], 0 for a value that is not a number."""
    return min(1.0, max(low, value)) if math.isfinite(value) else 0.0


def render(review: review_pb2.GameReview, names: Mapping[int, str] = SEATS) -> RenderableType:
    """The whole review: the moves, the graph, the costliest moves, how it was judged;
    each seat by `names` (its player's name)."""
    review = drawable(review)
    return Group(moves_table(review, names), Text(), graph(review, names=names), Text(),
                 costliest(review, names),
                 Text(f"Judged by {review.evaluator}.", style="dim"))


def review(
    match_id: Annotated[str, typer.Argument(help="The finished match to review.")],
    target: Annotated[str, typer.Option(callback=options.check_target, envvar=options.TARGET_ENV,
                                        help="Engine host:port.")] = DEFAULT_TARGET,
) -> None:
    """The hosted AI's review of a finished match: every move's win estimate for its
    mover before and after, a graph over the game, and the moves that cost most."""
    console = Console(highlight=False)
    try:
        with Client(target, timeout=REVIEW_TIMEOUT_S) as client:
            reply = client.review(match_id)
            names = _player_names(client, match_id)
    except BattleLineError as err:
        console.print(f"[red]{escape(options.failure(err, target))}[/]")
        raise typer.Exit(1) from None
    console.print(render(reply.review, names))


def _player_names(client: Client, match_id: str) -> Mapping[int, str]:
    """Each seat by its player's name, as the match shows it to a spectator (the seats'
    own names where the match cannot be read)."""
    try:
        view = client.view(match_id)
    except BattleLineError:
        return SEATS
    return {seat: tui.seat_label(view, seat) for seat in SEATS}
