"""The terminal board: every card keeps its letter (colour-blind safe), claim proofs and
clocks are shown, and typed choices are read as numbers or notation."""

from __future__ import annotations

import random

from rich.console import Console

from battleline.v1 import types_pb2
from battleline_client import tui
from battleline_client.bots import choose
from battleline_client.client import Client
from battleline_client.common import is_finished, is_my_turn


def _text(renderable: object) -> str:
    console = Console(width=160, record=True, force_terminal=True)
    console.print(renderable)
    return console.export_text()


def test_board_shows_every_card_hand_counts_proofs_and_clocks(client: Client) -> None:
    created = client.create(opponent="local", clock="per-move", clock_seconds=600)
    assert created.other is not None
    seats = [client.seat(created.seat), client.seat(created.other)]
    rng = random.Random(21)
    proof_seen = False
    for _ in range(400):
        views = [seat.view() for seat in seats]
        if is_finished(views[0]):
            break
        mover = 0 if is_my_turn(views[0]) else 1
        view = views[mover]
        shown = _text(tui.screen(view))
        for flag in view.flags:
            for card in [*flag.first_cards, *flag.second_cards, *flag.environment]:
                assert card in shown
        for card in view.hand:
            assert card in shown
        opponent = view.players[1 - mover]
        counts = ", ".join(f"{c.count} {c.deck}" for c in opponent.hand_counts)
        assert counts in shown and "running" in shown
        for claim in view.claimable_flags:
            proof_seen = True
            assert f"flag {claim.number}:" in shown and claim.proof[:40] in shown.replace(
                "\n", " ")
            # Shown beside its flag, a proof does not name the flag again (issue #15).
            assert not claim.proof.startswith("flag "), claim.proof
        claims = [a for a in view.legal_actions if a.startswith("claim ")]
        seats[mover].act(*(claims[:1] or choose(view, rng)))
    assert proof_seen
    final = client.view(created.match_id)
    assert "match over:" in _text(tui.screen(final)) or final.phase != 3
    assert tui.result(final).startswith("match over")


def test_cards_are_coloured_and_keep_their_letters() -> None:
    assert tui.card("R7").style == "bold red" and tui.card("R7").plain == "R7"
    assert tui.card("HQ", "deck52").style == "bold red"
    assert tui.card("FOG").style == tui.TACTIC_STYLE
    assert tui.card("?troop").style == tui.HIDDEN_STYLE


def test_parse_choice_reads_numbers_and_notation() -> None:
    legal = ["play R7@3", "play R7@4"]
    assert tui.parse_choice("2", legal) == ["play R7@4"]
    assert tui.parse_choice("3", legal) is None and tui.parse_choice("  ", legal) is None
    assert tui.parse_choice("play R7@3, draw troop", legal) == ["play R7@3", "draw troop"]
    assert tui.parse_choice("claim 4; draw tactic", legal) == ["claim 4", "draw tactic"]


def test_spectator_board_names_both_seats(client: Client) -> None:
    created = client.create(opponent="local", clock="none", name="Ada")
    shown = _text(tui.screen(client.view(created.match_id)))
    assert "Ada" in shown and "to play a card" in shown
    assert types_pb2.SEAT_FIRST in tui.SEAT_NAMES
