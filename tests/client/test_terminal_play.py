"""`battleline play` as a newcomer meets it, in a real terminal (pexpect, issue #15):
the board is drawn as a board and what can be done is told in a few lines (not sixty
numbered actions), `?` explains the notation, a refused input prints one error and one
hint, `list` shows the actions, `resign` asks first, and a move can be chosen by card,
then flag, the screen after it telling the move in words. Each game is on an engine of
its own: a `battleline serve` another test runs on the README's port would take it."""

from __future__ import annotations

import multiprocessing
import os
import re

import pexpect

from battleline_host.local import LocalService
from tests.client.terminal import MOVE, PASS
from tests.processes import BATTLELINE


def _plain(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)


def _newcomer(target: str) -> dict[str, str]:
    """A hot-seat game: ask for help, type nonsense, list, then think better of resigning.
    Returns what the terminal showed after each input."""
    child = pexpect.spawn(BATTLELINE, ["play", "--local", "--seed", "3", "--target", target],
                          encoding="utf-8", timeout=60, dimensions=(60, 160),
                          env={**os.environ, "COLUMNS": "160"})
    shown: dict[str, str] = {}
    try:
        child.expect(PASS)
        child.sendline("")
        child.expect(MOVE)
        shown["first"] = _plain(child.before or "")
        hand = re.search(r"your hand: ([^\r\n│]*)", shown["first"])
        assert hand is not None
        first_card = hand.group(1).split()[0]
        for name, text, until in (("help", "?", MOVE), ("refused", "play Z9@1", MOVE),
                                  ("unknown", "99", MOVE), ("quit", "quit", MOVE),
                                  ("hint", "hint", MOVE),
                                  ("list", "list", MOVE),
                                  ("resign", "resign", r"\[y/N\]"), ("kept", "n", MOVE)):
            child.sendline(text)
            child.expect(until)
            shown[name] = child.before or ""
        child.sendline(first_card)
        child.expect(r"to which flag\? \(([\d ]+);")
        flag = str(child.match.group(1)).split()[0]  # type: ignore[union-attr]
        child.sendline("77")  # a slip: asked again, the move not thrown away
        child.expect(r"no such choice[^\r\n]*\r?\n[^\r\n]*to which flag\? \(")
        child.sendline(flag)
        child.expect(MOVE)
        shown["card then flag"] = _plain(child.before or "")
        child.sendline("draw troop")  # the other seat's turn: its screen tells our move
        child.expect(PASS)
        shown["handover"] = child.before or ""
        child.sendline("")
        child.expect(MOVE)
        shown["next screen"] = _plain(child.before or "")
        shown["played"] = f"play {first_card}@{flag}"
        return shown
    finally:
        child.terminate(force=True)


def test_a_newcomer_gets_help_short_errors_and_a_resign_question(redis_url: str) -> None:
    with LocalService(redis_url) as engine, multiprocessing.get_context("spawn").Pool(1) as pool:
        shown = pool.apply(_newcomer, (engine.address,))
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
    # `quit` is no action: it says how to leave instead of "no action 'quit'".
    assert "to leave: resign gives the match up" in _plain(shown["quit"]), shown["quit"]
    # `hint` asks the hosted AI; this engine runs none, and says so in a line.
    assert "no hint (no-ai-service): hints and reviews need the AI service" in _plain(
        shown["hint"]), shown["hint"]
    assert " 1. " in shown["list"]
    assert "resign" in shown["resign"]
    assert f"you: {shown['played']}" in shown["card then flag"] or (
        f"seat: {shown['played']}" in shown["card then flag"]), shown["card then flag"]
    card, flag = shown["played"].removeprefix("play ").split("@")
    assert f"first seat: played {card} at flag {flag}" in shown["next screen"], shown[
        "next screen"]
    # Handed over, the terminal is wiped, scrollback too, before the second seat is asked
    # in: the first seat's hand and the card it drew stood above the second seat's screen.
    wiped = shown["handover"].rsplit("\x1b[2J", 1)
    assert len(wiped) == 2 and "\x1b[3J" in wiped[1], repr(shown["handover"][-300:])


GUILE_WORDS = {"DESERTER": "Deserter: removed", "TRAITOR": "Traitor: took",
               "REDEPLOY": "Redeploy: "}


def _answer(offered: str) -> str:
    """What to type, from the "you can" lines: a guile tactic by its name alone, else a
    troop by card then flag, else a tactic drawn (so that guile tactics come), else 1."""
    lines = offered[offered.rindex("you can"):].splitlines()
    rows = {line.split()[0]: line for line in lines[1:] if line.split()}
    for verb in ("deserter", "traitor", "redeploy"):
        if verb in rows:
            return verb.upper()
    troop = re.search(r"^play\s+.*?\b([ROYGBP]\d+)\b.*at flag (\d)", rows.get("play", ""))
    if troop:
        return f"{troop.group(1)} {troop.group(2)}"
    if "draw" in rows:
        return "draw tactic" if "tactic" in rows["draw"] else "draw troop"
    return "1"


def _expect_move(child: pexpect.spawn) -> None:
    """Up to the next move prompt, handing the terminal over when the seat changes."""
    while child.expect([MOVE, PASS]) == 1:
        child.sendline("")


def _guile_by_name(target: str) -> tuple[str, str]:
    """A hot-seat game played until a guile tactic is offered; it is chosen by typing its
    name, then answering which card and which flag. Returns the questions asked and what
    the terminal showed after the move."""
    child = pexpect.spawn(BATTLELINE, ["play", "--local", "--seed", "2", "--target", target],
                          encoding="utf-8", timeout=60, dimensions=(60, 160),
                          env={**os.environ, "COLUMNS": "160"})
    try:
        _expect_move(child)
        for _ in range(200):
            typed = _answer(_plain(child.before or ""))
            child.sendline(typed)
            if typed not in GUILE_WORDS:
                _expect_move(child)
                continue
            asked = []
            while child.expect([rf"{typed}[^\r\n]*\? \(([^)]*)\) ", MOVE]) == 0:
                asked.append(_plain(str(child.after)))
                child.sendline(str(child.match.group(1)).split()[0])  # type: ignore[union-attr]
            return "\n".join(asked), _plain(child.before or "")
        raise AssertionError("no guile tactic offered in 200 moves")
    finally:
        child.terminate(force=True)


def test_a_guile_tactic_is_chosen_by_name_then_card_then_flag(redis_url: str) -> None:
    with LocalService(redis_url) as engine, multiprocessing.get_context("spawn").Pool(1) as pool:
        asked, after = pool.apply(_guile_by_name, (engine.address,))
    verb = asked.split()[0]
    assert re.search(rf"^{verb} (which card|to which flag)\? \(", asked), asked
    assert GUILE_WORDS[verb] in after, after
