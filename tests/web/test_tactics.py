"""Tactics through the page: Scout's two steps, Redeploy, Traitor, Deserter, Fog, Mud and a
Leader, each from a real position.

The position comes from a LOCAL match set up with the Python client (seeded deals, both
seats driven until the first seat holds the tactic with a legal use); the page then opens
that seat as a reloaded tab would, and the tactic is played with clicks only.
"""

from __future__ import annotations

import itertools
import random
import re
from collections.abc import Callable

import pytest
from playwright.sync_api import BrowserContext, Page, expect

from battleline.v1 import types_pb2
from battleline_client.client import Client
from battleline_client.common import SeatHandle
from tests.local_match import turns

from .pages import Service, first_step, open_seat, settle

TROOP_PLAY = re.compile(r"^play [ROYGBP]\d+@\d$")
TACTIC_PLAY = re.compile(r"^play [A-Z]{3,}@\d$")  # a Leader, morale tactic, Fog or Mud
# After picking the tactic: a highlighted flag, or a highlighted card on the board.
TACTIC_STEPS = ["button.flag-token.target", ".board button.card[aria-pressed='false']"]


def first_seat_at(engine: str, reached: Callable[[types_pb2.MatchView], bool], what: str,
                  one_tactic: bool = False) -> SeatHandle:
    """The first seat of a LOCAL match at its first turn where `reached(its view)`: the
    first seat plays troops and draws tactics (with `one_tactic`, it plays one tactic once
    it holds two, then draws troops only), the second plays troops."""
    with Client(engine) as client:
        for seed in range(1, 20):
            rng = random.Random(seed)
            created = client.create(opponent="local", clock="none", seed=seed, seat="first")
            assert created.other is not None
            first, second = client.seat(created.seat), client.seat(created.other)
            for seat, view in itertools.islice(turns([first, second]), 300):
                legal = list(view.legal_actions)
                if seat is first and reached(view):
                    return created.seat
                played = _tactics_played(view, view.viewer)
                tactics = [a for a in legal if TACTIC_PLAY.match(a)]
                if seat is first and one_tactic and not played and tactics and len(
                        [c for c in view.hand if len(c) > 3]) >= 2:
                    seat.act(tactics[0], "draw troop")
                    continue
                troops = [action for action in legal if TROOP_PLAY.match(action)]
                drawing_tactics = seat is first and not (one_tactic and played)
                prefer = "draw tactic" if drawing_tactics else "draw troop"
                if troops:
                    seat.act(rng.choice(troops))
                elif prefer in legal:
                    seat.act(prefer)
                else:
                    seat.act(next((a for a in legal if not a.startswith("claim")), legal[0]))
    raise AssertionError(f"no position with {what} in 19 seeded games")


def _tactics_played(view: types_pb2.MatchView, seat: int) -> int:
    return next(p.tactics_played for p in view.players if p.seat == seat)


def seat_holding(engine: str, wanted: str) -> SeatHandle:
    """The first seat at a turn where an action starting with `wanted` is legal."""
    return first_seat_at(engine, lambda view: any(
        action.startswith(wanted) for action in view.legal_actions), repr(wanted))


def seat_a_tactic_ahead(engine: str) -> SeatHandle:
    """The first seat at its play step, holding a tactic after playing one (the second
    seat plays none): the rules hold that tactic back."""
    def held_back(view: types_pb2.MatchView) -> bool:
        others = [p.seat for p in view.players if p.seat != view.viewer]
        return (view.turn_step == types_pb2.TURN_STEP_PLAY
                and _tactics_played(view, view.viewer) > _tactics_played(view, others[0])
                and any(len(card) > 3 for card in view.hand))
    return first_seat_at(engine, held_back, "a tactic held back", one_tactic=True)


def pick(page: Page, card: str) -> None:
    page.locator(f"button[data-testid='hand-card'][aria-label='{card}']").click()
    expect(page.get_by_test_id("hint")).to_be_visible()


def moves(page: Page) -> str:
    return page.get_by_test_id("log").inner_text()


@pytest.mark.timeout(120)
def test_scout_draws_three_then_puts_two_back(service: Service, browser: BrowserContext) -> None:
    page = browser.new_page()
    open_seat(page, service.web_url, seat_holding(service.engine, "play SCOUT"))
    status = page.get_by_test_id("status")
    hand = page.locator("[data-testid='hand'] .card")
    held = hand.count()
    pick(page, "Scout")
    page.get_by_role("button", name="Play Scout").click()
    settle(page)
    for _ in range(3):
        expect(status).to_contain_text("Scout: draw a card")
        page.get_by_test_id("deck-troop").click()
        settle(page)
    expect(status).to_contain_text("Scout: put a card from your hand back")
    expect(hand).to_have_count(held - 1 + 3)
    for _ in range(2):
        returned = page.get_by_test_id("hand-card").first
        name = returned.get_attribute("aria-label")
        returned.click()
        page.get_by_role("button", name=f"Scout: put {name} back on its deck").click()
        settle(page)
    expect(status).to_contain_text("claim flags, then end the turn")
    expect(hand).to_have_count(held - 1 + 3 - 2)
    expect(page.get_by_test_id("scout-returned")).to_contain_text("Put back with Scout")
    assert moves(page).count("You: Scout: put") == 2


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("wanted", "card", "logged"), [
    ("redeploy ", "Redeploy", "You: Redeploy: move"),
    ("traitor ", "Traitor", "You: Traitor: take"),
    ("deserter ", "Deserter", "You: Deserter: discard"),
    ("play FOG@", "Fog", "You: play Fog at flag"),
    ("play MUD@", "Mud", "You: play Mud at flag"),
    ("play ALEXANDER@", "Alexander, Leader", "You: play Alexander, Leader at flag"),
])
def test_tactic_through_the_page(service: Service, browser: BrowserContext,
                                 wanted: str, card: str, logged: str) -> None:
    page = browser.new_page()
    open_seat(page, service.web_url, seat_holding(service.engine, wanted))
    # Printed in full on the card (issue #15: "REDEP."), and what it does on hover.
    held = page.locator(f"button[data-testid='hand-card'][aria-label='{card}']")
    expect(held.locator(".value")).to_have_text(card.split(",")[0])
    expect(held).to_have_attribute("title", re.compile(rf"^{card}: \w+"))
    pick(page, card)
    for _ in range(2):  # the tactic, then its target (Redeploy, Traitor) or done
        if logged in moves(page):
            break
        step = first_step(page, TACTIC_STEPS)
        assert step is not None, page.get_by_test_id("hint").inner_text()
        step.click()
        settle(page)
    expect(page.get_by_test_id("log")).to_contain_text(logged)
    expect(page.get_by_test_id("status")).to_contain_text("Your turn: claim flags")
    if card in ("Fog", "Mud"):  # shown at its flag
        flag = re.search(rf"{logged} (\d)", moves(page))
        assert flag is not None
        expect(page.get_by_test_id(f"flag-{flag.group(1)}")).to_have_attribute(
            "aria-label", re.compile(f"{card}"))



@pytest.mark.timeout(120)
def test_a_tactic_held_back_says_why(service: Service, browser: BrowserContext) -> None:
    """A player saw Redeploy greyed out with no reason, and took it for a bug."""
    page = browser.new_page()
    open_seat(page, service.web_url, seat_a_tactic_ahead(service.engine))
    note = page.get_by_test_id("not-now")
    expect(note).to_contain_text("You have played 1 tactics and your opponent 0")
    idle = page.locator("[data-testid='hand'] .card.idle[title*='not now: You have played 1']")
    expect(idle).not_to_have_count(0)  # the card itself says so on hover
    expect(page.get_by_test_id("deck-troop")).to_have_attribute(
        "title", "Play a card first; then draw to end your turn")
