"""`battleline watch MATCH_ID`: follow a match live as a spectator (or a seat, with a token)."""

from __future__ import annotations

from collections import deque
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from battleline.v1 import types_pb2

from .. import tui
from ..common import DEFAULT_TARGET
from ..errors import BattleLineError
from . import options


def watch(
    match_id: Annotated[str, typer.Argument(help="The match to follow.")],
    target: Annotated[str, typer.Option(callback=options.check_target, envvar=options.TARGET_ENV,
                                        help="Engine host:port.")] = DEFAULT_TARGET,
    token: Annotated[str | None, typer.Option(
        envvar="BATTLELINE_TOKEN",
        help="A seat token, to watch as that seat; better by BATTLELINE_TOKEN (a command "
             "line is readable by every local user).")] = None,
    boards: Annotated[bool, typer.Option(
        help="Redraw the board after every move, not only at the start and the end.")] = False,
) -> None:
    """Follow a match: the board, then every move as it happens (reconnects by itself)."""
    console = Console(highlight=False)
    view: types_pb2.MatchView | None = None
    recent: deque[types_pb2.MatchEvent] = deque(maxlen=4 * tui.RECENT)  # the boards tell them
    board_is_last = False  # the board last printed shows `view` (a finished match's once)
    try:
        with options.client(target) as client:
            for message in client.watch(match_id, token, include_views=True):
                if message.HasField("snapshot"):
                    view = message.snapshot
                    console.print(tui.screen(view))
                    board_is_last = True
                    continue
                if message.HasField("view"):
                    view = message.view
                recent.append(message.event)
                console.print(tui.event_line(message.event, view))
                board_is_last = False
                if boards and view is not None and message.HasField("view"):
                    console.print(tui.screen(view, recent=recent))
                    board_is_last = True
    except BattleLineError as err:
        console.print(f"[red]{escape(options.failure(err, target))}[/]")
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    if view is not None and view.phase == types_pb2.MATCH_PHASE_FINISHED:
        if not board_is_last:
            console.print(tui.screen(view, recent=recent))
        hands = tui.revealed_hands(view)  # the end shows every hand, as `play` does
        if hands is not None:
            console.print(hands)
        console.print(f"[bold]{escape(tui.result(view))}[/]")
