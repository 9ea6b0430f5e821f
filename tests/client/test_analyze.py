"""`battleline analyze`: every flag shown, JSON that agrees with the rules core, clean errors.

Expected values come from the rules core itself (decide_claim, brute-force
formation search, legal_actions), never from the command's own output.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from battleline_client.analysis import analyze_state
from battleline_client.cli import app
from battleline_rules import (
    SPECTATOR,
    GameState,
    Kind,
    Voice,
    brute_force_best,
    card_name,
    decide_claim,
    dump_position,
    format_action,
    load_position,
    new_game,
)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples" / "positions").glob("*.txt"))
runner = CliRunner()


def _positions() -> list[tuple[str, str]]:
    """Each example as given, plus every seat's and the spectator's view of full states."""
    out = []
    for path in EXAMPLES:
        text = path.read_text()
        out.append((path.name, text))
        state = load_position(text)
        if state.viewer is None:
            for viewer in (0, 1, SPECTATOR):
                out.append((f"{path.name}@{viewer}", dump_position(state.view(viewer))))
    return out


POSITIONS = _positions()
IDS = [name for name, _ in POSITIONS]


def _json(text: str, *args: str) -> dict:
    result = runner.invoke(app, ["analyze", *args, "--json"], input=text)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_examples_exist_and_cover_each_ruleset_and_a_view() -> None:
    states = [load_position(p.read_text()) for p in EXAMPLES]
    assert len(states) >= 3
    assert {"standard", "deck52"} <= {s.ruleset.name for s in states}
    assert any(s.viewer is not None for s in states)
    assert any(f.fog for s in states for f in s.flags)
    assert any(f.size == 4 for s in states for f in s.flags)


@pytest.mark.parametrize(("name", "text"), POSITIONS, ids=IDS)
def test_text_output_mentions_every_flag_and_its_cards(name: str, text: str) -> None:
    result = runner.invoke(app, ["analyze", "-"], input=text)
    assert result.exit_code == 0, result.output
    out = result.stdout
    state = load_position(text)
    for i, flag in enumerate(state.flags, 1):
        assert re.search(rf"\bFlag {i}\b", out), f"flag {i} missing in {name}"
        for card in flag.cards[0] + flag.cards[1]:
            assert card_name(card) in out
    assert f"Ruleset    {state.ruleset.name}" in out or state.ruleset.name in out
    assert "Legal actions" in out


def test_text_output_names_the_seats_in_each_claim() -> None:
    """Both seats' rows used to say "your ... beats their ...": now each names its seat."""
    text = (ROOT / "examples" / "positions" / "standard-midgame.txt").read_text()
    out = runner.invoke(app, ["analyze", "-"], input=text, terminal_width=200).stdout
    assert "your " not in out and "their " not in out, out
    assert re.search(r"seat [01]'s ", out), out


@pytest.mark.parametrize(("name", "text"), POSITIONS, ids=IDS)
def test_json_claims_and_cards_agree_with_the_rules_core(name: str, text: str) -> None:
    data = _json(text)
    state = load_position(text)
    assert data["ruleset"] == state.ruleset.name
    assert len(data["flags"]) == state.ruleset.flags
    claims_now = {a.flag for a in state.legal_actions() if a.kind is Kind.CLAIM}
    for i, (flag, shown) in enumerate(zip(state.flags, data["flags"], strict=True)):
        assert shown["flag"] == i + 1
        assert shown["sides"] == [[card_name(c) for c in side] for side in flag.cards]
        assert shown["claimed_by"] == (None if flag.claimed < 0 else flag.claimed)
        assert shown["size"] == flag.size
        assert [(e["card"], e["owner"]) for e in shown["environment"]] == [
            (card_name(c), o) for c, o in flag.env
        ]
        for seat in (0, 1):
            verdict = decide_claim(state.ruleset, flag, i, seat, state.available)
            claim = shown["claims"][seat]
            assert claim["granted"] == verdict.granted
            assert claim["reason"] == verdict.reason
            assert claim["explanation"] == verdict.explain(
                Voice(f"seat {seat}", f"seat {seat}'s", f"seat {1 - seat}", f"seat {1 - seat}'s"))
            assert claim["refutation"] == [card_name(c) for c in verdict.refutation]
            takeable = seat == state.current_player and i in claims_now
            assert claim["takeable_now"] == takeable
            assert not claim["takeable_now"] or claim["granted"]


@pytest.mark.parametrize(("name", "text"), POSITIONS, ids=IDS)
def test_formations_match_brute_force(name: str, text: str) -> None:
    """Complete sides and small completions, checked by enumeration, not by best_formation."""
    data = _json(text)
    state = load_position(text)
    for flag, shown in zip(state.flags, data["flags"], strict=True):
        for seat in (0, 1):
            form = shown["formations"][seat]
            cards = flag.cards[seat]
            missing = flag.size - len(cards)
            assert form["complete"] == (missing == 0)
            if missing > 2:
                continue
            expected = brute_force_best(state.ruleset, cards, missing, state.available, flag.fog)
            assert form["strength"] == expected
            assert form["reachable"] == (expected is not None)
            assert len(form["added"]) == (missing if expected is not None else 0)


@pytest.mark.parametrize(("name", "text"), POSITIONS, ids=IDS)
def test_json_header_counts(name: str, text: str) -> None:
    data = _json(text)
    state = load_position(text)
    assert data["decks"] == {"troop": len(state.decks[0]), "tactic": len(state.decks[1])}
    assert [h["troop"] + h["tactic"] for h in data["hands"]] == [len(h) for h in state.hands]
    assert data["player_to_act"] == state.current_player
    assert data["claimed_flags"] == [[i + 1 for i in state.claimed_by(s)] for s in (0, 1)]
    for seat, hand in enumerate(data["hands"]):
        hidden = state.viewer is not None and state.viewer != seat and bool(state.hands[seat])
        assert (hand["cards"] is None) == hidden
        if not hidden:
            assert hand["cards"] == [card_name(c) for c in state.hands[seat]]


FULL_EXAMPLES = [p for p in EXAMPLES if load_position(p.read_text()).viewer is None]


@pytest.mark.parametrize("viewer", [0, 1, SPECTATOR])
@pytest.mark.parametrize("path", FULL_EXAMPLES, ids=[p.name for p in FULL_EXAMPLES])
def test_views_list_the_full_states_actions_or_none(path: Path, viewer: int) -> None:
    """A view lists the real actions to the seat to act, and None to anyone else."""
    state = load_position(path.read_text())
    full = [format_action(a) for a in state.legal_actions()]
    assert _json(path.read_text())["legal_actions"] == full
    shown = _json(dump_position(state.view(viewer)))["legal_actions"]
    if viewer == state.current_player:
        assert shown == full
    else:
        assert shown is None


def test_stdin_without_a_path_argument() -> None:
    text = EXAMPLES[0].read_text()
    with_dash = _json(text, "-")
    without = _json(text)
    assert with_dash == without
    state = load_position(text)
    path_data = runner.invoke(app, ["analyze", str(EXAMPLES[0]), "--json"])
    assert json.loads(path_data.stdout) == without
    assert len(without["flags"]) == state.ruleset.flags


def _random_positions(ruleset: str, seeds: range, every: int) -> list[GameState]:
    states = []
    for seed in seeds:
        state, rng = new_game(ruleset, seed=seed), random.Random(seed)
        while True:
            if state.ply % every == 0:
                states.append(state.clone())
            if state.is_over:
                break
            state.apply(rng.choice(state.legal_actions()))
    return states


@pytest.mark.parametrize("ruleset", ["standard", "basic", "deck52"])
def test_analysis_of_random_positions_to_the_end(ruleset: str) -> None:
    """Whole games, finished ones included: JSON-ready data whose claims match decide_claim."""
    states = _random_positions(ruleset, range(4), every=5)
    assert any(s.is_over for s in states)
    for state in states:
        data = json.loads(json.dumps(analyze_state(state)))
        if state.is_over:
            assert data["status"] in ("won", "draw")
            assert data["legal_actions"] == []
            assert data["player_to_act"] is None
        for i, flag in enumerate(state.flags):
            for seat in (0, 1):
                verdict = decide_claim(state.ruleset, flag, i, seat, state.available)
                assert data["flags"][i]["claims"][seat]["granted"] == verdict.granted


BAD_INPUTS = {
    "garbage": "this is not a position\n",
    "empty": "",
    "unknown_ruleset": re.sub(r"ruleset: \w+", "ruleset: chess", EXAMPLES[0].read_text()),
    "bad_card": EXAMPLES[0].read_text().replace("hand 0: ", "hand 0: Z99 "),
    "missing_flag": "\n".join(
        line for line in EXAMPLES[0].read_text().splitlines() if not line.startswith("flag 2:")
    ),
    "card_twice": EXAMPLES[0].read_text().replace("hand 0: ", "hand 0: R1 R1 "),
}


@pytest.mark.parametrize("kind", sorted(BAD_INPUTS))
def test_bad_input_gives_one_line_and_exit_2(kind: str, tmp_path: Path) -> None:
    path = tmp_path / "bad.txt"
    path.write_text(BAD_INPUTS[kind])
    result = runner.invoke(app, ["analyze", str(path)])
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0]
    assert "Traceback" not in result.output


def test_missing_file_gives_exit_2(tmp_path: Path) -> None:
    result = runner.invoke(app, ["analyze", str(tmp_path / "nope.txt")])
    assert result.exit_code == 2
    assert "cannot read" in result.stderr


def _entry_point() -> str:
    beside = Path(sys.executable).with_name("battleline")
    found = str(beside) if beside.exists() else shutil.which("battleline")
    if found is None:
        pytest.fail("the battleline entry point is not installed (pip install -e .)")
    return found


def test_installed_entry_point_in_a_subprocess(tmp_path: Path) -> None:
    example = next(p for p in EXAMPLES if load_position(p.read_text()).ruleset.name == "deck52")
    done = subprocess.run(
        [_entry_point(), "analyze", str(example), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert [f["flag"] for f in data["flags"]] == list(range(1, 9))
    bad = tmp_path / "bad.txt"
    bad.write_text("nonsense\n")
    failed = subprocess.run(
        [_entry_point(), "analyze", str(bad)], capture_output=True, text=True, timeout=60
    )
    assert failed.returncode == 2
    assert failed.stdout == "" and "Traceback" not in failed.stderr


def test_top_level_help_spells_the_command_as_it_is_typed() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    assert "analyse" not in result.stdout and "serve, play, analyze" in result.stdout


def test_no_claim_while_mud_leaves_a_side_too_full() -> None:
    """Issue #15: both seats were told they could claim, while seat 0's side was 'incomplete'."""
    from battleline_rules import parse_action
    from tests.rules.positions import position

    state = position(flags={1: "R1 R2 R3 R4 | B5 G5 Y5 | MUD/0 | -"},
                     hands=("", "DESERTER P2"), player=1)
    state.apply(parse_action("deserter MUD@1"))
    flag = analyze_state(state)["flags"][0]
    assert [claim["granted"] for claim in flag["claims"]] == [False, False]
    assert all("until the discard" in claim["explanation"] for claim in flag["claims"])
    assert flag["formations"][0]["complete"] is False
