"""`battleline analyze`: read a position, print its per-flag analysis (rich text or JSON).

The analysis itself lives in `battleline_client.analysis`; this module only
reads input, reports bad input in one line, and renders.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from battleline_rules import load_position

from ..analysis import Json, analyze_state

BAD_INPUT = 2


def _fail(source: str, message: str) -> typer.Exit:
    """One line on stderr, exit code 2: a position problem is the user's to fix, not a crash."""
    first = " ".join(str(message).split())
    typer.echo(f"battleline analyze: {source}: {first}", err=True)
    return typer.Exit(BAD_INPUT)


def _read(path: str) -> tuple[str, str]:
    """The position text and a name for it in messages; ``-`` is stdin."""
    if path == "-":
        return sys.stdin.read(), "<stdin>"
    try:
        return Path(path).read_text(encoding="utf-8"), path
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else error
        raise _fail(path, f"cannot read the file: {reason}") from None


def load_analysis(path: str) -> Json:
    """Read and analyse a position, turning every kind of bad input into a clean exit."""
    text, source = _read(path)
    if not text.strip():
        raise _fail(source, "empty input: expected a position (see `dump_position`)")
    try:
        state = load_position(text)
    except (ValueError, KeyError, IndexError) as error:
        raise _fail(source, f"not a valid position: {error}") from None
    try:
        return analyze_state(state)
    except ValueError as error:
        raise _fail(source, f"inconsistent position: {error}") from None
    except (KeyError, IndexError, AssertionError, TypeError) as error:
        # Fields that parse one by one but contradict each other (e.g. a Mud
        # discard step with nobody to discard) make the rules core trip.
        detail = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
        raise _fail(source, f"inconsistent position (the rules core failed: {detail})") from None


# ------------------------------------------------------------------ rendering


def _seat_name(seat: int | None) -> str:
    return "-" if seat is None else f"seat {seat}"


def _cards(cards: list[str] | None) -> str:
    if cards is None:
        return "(hidden)"
    return " ".join(cards) or "-"


def _header(data: Json) -> Table:
    """Ruleset, options, turn and the public counts, as a two-column grid."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    opts = data["options"]
    status = data["status"]
    if status == "won":
        status = f"won by seat {data['winner']}"
    grid.add_row("Ruleset", data["ruleset"])
    grid.add_row(
        "Options",
        f"claim timing {opts['claim_timing']}, hand size {opts['hand_size']}, "
        f"first player seat {opts['first_player']}",
    )
    grid.add_row("Viewer", str(data["viewer"]))
    grid.add_row("Status", status)
    grid.add_row(
        "Turn",
        f"ply {data['ply']}, seat {data['player']}'s turn, phase {data['phase']}, "
        f"to act: {_seat_name(data['player_to_act'])}",
    )
    decks = data["decks"]
    removed = f", {data['removed']} removed face down" if data["removed"] else ""
    grid.add_row("Decks", f"troop {decks['troop']}, tactic {decks['tactic']}{removed}")
    for hand in data["hands"]:
        grid.add_row(
            f"Hand {hand['seat']}",
            f"{hand['troop']} troop + {hand['tactic']} tactic: {_cards(hand['cards'])}",
        )
    for seat, pile in enumerate(data["discards"]):
        grid.add_row(f"Discard {seat}", _cards(pile))
    for seat, flags in enumerate(data["claimed_flags"]):
        grid.add_row(f"Claimed {seat}", " ".join(map(str, flags)) or "none")
    return grid


def _formation_text(form: Json) -> str:
    if form["complete"]:
        return f"complete: {form['description']}"
    if form["cards_needed"] == 0:
        return "over-full: must discard a card (Mud left)"
    if not form["reachable"]:
        return f"needs {form['cards_needed']}: cannot be completed from unseen troops"
    added = " ".join(form["added"])
    return f"needs {form['cards_needed']}: at best {form['description']} (adding {added})"


def _claim_text(claim: Json) -> Text:
    if claim["granted"]:
        mark = "CLAIMABLE NOW" if claim["takeable_now"] else "provable"
        return Text.assemble((f"{mark}: ", "bold green"), claim["explanation"])
    return Text.assemble(("no: ", "red"), claim["explanation"])


def _flag_panel(flag: Json) -> Panel:
    """One flag: a row per seat with its cards, formation and claim verdict."""
    table = Table(show_edge=False, expand=True, pad_edge=False)
    table.add_column("Seat", no_wrap=True)
    table.add_column("Cards", no_wrap=True)
    table.add_column("Formation", ratio=2)
    table.add_column("Claim", ratio=3)
    for seat in (0, 1):
        table.add_row(
            str(seat),
            _cards(flag["sides"][seat]),
            _formation_text(flag["formations"][seat]),
            _claim_text(flag["claims"][seat]),
        )
    env = ", ".join(f"{e['card']} (seat {e['owner']})" for e in flag["environment"])
    title = f"Flag {flag['flag']}"
    details = [f"{flag['size']} cards a side"]
    if env:
        details.append(env)
    if flag["claimed_by"] is not None:
        details.append(f"claimed by seat {flag['claimed_by']}")
    style = "dim" if flag["claimed_by"] is not None else "none"
    return Panel(table, title=f"{title}: {'; '.join(details)}", title_align="left", style=style)


def _actions(data: Json) -> Group:
    actions: list[str] | None = data["legal_actions"]
    who = _seat_name(data["player_to_act"])
    if actions is None:
        body = Text(f"hidden: they depend on {who}'s hand, which this view does not show")
    else:
        body = Text(", ".join(actions) or "none (the game is over)")
    title = Text(f"Legal actions for {who} ({len(actions or [])})", style="bold")
    return Group(title, body)


NOTE = (
    "A provable claim is only taken by the player to act, in the claim step "
    "(after playing, or before with start-of-turn timing); it is marked CLAIMABLE NOW then."
)


def render(data: Json, console: Console) -> None:
    """The analysis for a human: header, one panel per flag, the legal actions."""
    console.print(_header(data))
    for flag in data["flags"]:
        console.print(_flag_panel(flag))
    console.print(Text(NOTE, style="italic"))
    console.print(_actions(data))


def analyze(
    path: Annotated[
        str, typer.Argument(help="Position file (the rules core's notation); '-' or none: stdin.")
    ] = "-",
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the analysis as JSON (docs/analyze.md).")
    ] = False,
) -> None:
    """Analyze a position: each flag's formations and claims, and the legal actions."""
    data = load_analysis(path)
    if as_json:
        typer.echo(json.dumps(data, indent=2))
        return
    render(data, Console())
