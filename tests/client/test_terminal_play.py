"""`battleline play` as a newcomer meets it, in a real terminal (pexpect, issue #15):
the board is drawn as a board and what can be done is told in a few lines (not sixty
numbered actions), `?` explains the notation, a refused input prints one error and one
hint, `list` shows the actions, `resign` asks first, and a move can be chosen by card,
then flag, the screen after it telling the move in words."""

from __future__ import annotations

import multiprocessing
import os
import re

import pexpect

from tests.client.terminal import MOVE
from tests.processes import BATTLELINE


def _plain(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)


def _newcomer() -> dict[str, str]:
    """A hot-seat game: ask for help, type nonsense, list, then think better of resigning.
    Returns what the terminal showed after each input."""
    child = pexpect.spawn(BATTLELINE, ["play", "--local", "--seed", "3"], encoding="utf-8",
                          timeout=60, dimensions=(60, 160), env={**os.environ, "COLUMNS": "160"})
    shown: dict[str, str] = {}
    try:
        child.expect(MOVE)
        shown["first"] = _plain(child.before or "")
        hand = re.search(r"your hand: ([^\r\n│]*)", shown["first"])
        assert hand is not None
        first_card = hand.group(1).split()[0]
        for name, text, until in (("help", "?", MOVE), ("refused", "play Z9@1", MOVE),
                                  ("unknown", "99", MOVE), ("list", "list", MOVE),
                                  ("resign", "resign", r"\[y/N\]"), ("kept", "n", MOVE)):
            child.sendline(text)
            child.expect(until)
            shown[name] = child.before or ""
        child.sendline(first_card)
        child.expect(r"to which flag\? \(([\d ]+)\)")
        flag = str(child.match.group(1)).split()[0]  # type: ignore[union-attr]
        child.sendline(flag)
        child.expect(MOVE)
        shown["card then flag"] = _plain(child.before or "")
        child.sendline("draw troop")  # the other seat's turn: its screen tells our move
        child.expect(MOVE)
        shown["next screen"] = _plain(child.before or "")
        shown["played"] = f"play {first_card}@{flag}"
        return shown
    finally:
        child.terminate(force=True)


def test_a_newcomer_gets_help_short_errors_and_a_resign_question() -> None:
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        shown = pool.apply(_newcomer)
    first = shown["first"]
    assert all(f"[{n}]" in first for n in range(1, 10)), first  # the nine flags
    can = first[first.index("you can"):]
    assert " 1. " not in first and len(can.strip().splitlines()) <= 5, can
    assert re.search(r"play +(\w+ )+at flag 1 2 3 4 5 6 7 8 9", can), can
    help_text = shown["help"]
    for words in ("R7", "ALEXANDER", "play R7@3", "claim 4", "draw troop", "end", "list",
                  "resign"):
        assert words in help_text, (words, help_text)
    for name in ("refused", "unknown"):
        lines = [line for line in shown[name].splitlines() if line.strip()]
        assert len(lines) <= 4, (name, shown[name])  # the input, the error, the hint
        assert " 1. " not in shown[name], shown[name]
    assert "refused" in shown["refused"]
    assert " 1. " in shown["list"]
    assert "resign" in shown["resign"]
    assert f"you: {shown['played']}" in shown["card then flag"] or (
        f"seat: {shown['played']}" in shown["card then flag"]), shown["card then flag"]
    card, flag = shown["played"].removeprefix("play ").split("@")
    assert f"first seat: played {card} at flag {flag}" in shown["next screen"], shown[
        "next screen"]
