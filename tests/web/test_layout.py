"""The page at a phone's width (390x844, issue #15): no sideways scrolling and all nine
flags on screen in the lobby, mid-game and at the end; the legends for the claimed-flag
tokens and the colours; tactics printed in full; on the end screen the viewer's own bar
above the list of every move. With BATTLELINE_SCREENSHOTS=DIR it saves phone-lobby.png,
phone-mid.png and phone-end.png there (scripts/screenshots.py).

The match is a LOCAL one played by seeded random moves through the Python client, which
claims every flag it can, so the board has claimed flags on both sides; the page holds the
first seat, as a reloaded tab would, and follows the rest of the game on its Watch stream.
"""

from __future__ import annotations

import itertools
import random
import re
import time

import pytest
from playwright.sync_api import BrowserContext, Page, expect

from battleline.v1 import types_pb2
from battleline_client.client import Client, Seat
from battleline_client.common import SeatHandle
from tests.local_match import turns

from .pages import Service, open_seat, shoot

PHONE = {"width": 390, "height": 844}
TACTIC_NAMES = {"Alexander", "Darius", "Companion Cavalry", "Shield Bearers", "Fog", "Mud",
                "Scout", "Redeploy", "Deserter", "Traitor"}


def fits_the_width(page: Page) -> None:
    """Nothing wider than the window, and every flag inside it."""
    width = page.evaluate("document.scrollingElement.scrollWidth")
    inner = page.evaluate("innerWidth")
    assert width <= inner, f"the page is {width} px wide in a {inner} px window"
    for flag in range(1, 10):
        shown = page.get_by_test_id(f"flag-{flag}")
        deadline = time.monotonic() + 10
        # Asked again while the board is being drawn or redrawn (it is as the game's end
        # and its review arrive): a flag between two drawings has no box.
        while (box := shown.bounding_box()) is None:
            assert time.monotonic() < deadline, f"flag {flag} is not shown"
            time.sleep(0.1)
        assert box["x"] >= 0 and box["x"] + box["width"] <= inner, (flag, box)


def step(seat: Seat, view: types_pb2.MatchView, rng: random.Random) -> None:
    """A claim when there is one, else a random legal action."""
    claims = [a for a in view.legal_actions if a.startswith("claim ")]
    seat.act(claims[0] if claims else rng.choice(list(view.legal_actions)))


def mid_game(engine: str, seed: int) -> tuple[SeatHandle, SeatHandle]:
    """A LOCAL match played until both seats hold a flag and a tactic lies on the board,
    the first seat to play a card; its two seats."""
    with Client(engine) as client:
        created = client.create(opponent="local", clock="none", seed=seed, seat="first")
        assert created.other is not None
        seats = [client.seat(created.seat), client.seat(created.other)]
        rng = random.Random(seed)
        for seat, view in itertools.islice(turns(seats), 400):
            flags = [p.flags_claimed for p in view.players]
            tactic_down = any(re.search(r"[A-Z]{3}", card) for f in view.flags
                              for card in [*f.first_cards, *f.second_cards, *f.environment])
            if (min(flags) > 0 and tactic_down and seat is seats[0]
                    and view.turn_step == types_pb2.TURN_STEP_PLAY):
                return created.seat, created.other
            step(seat, view, rng)
    raise AssertionError(f"seed {seed}: no game with a flag for each seat and a tactic down")


def play_out(engine: str, handles: tuple[SeatHandle, SeatHandle], seed: int) -> None:
    """Both seats play on to the end of the game."""
    with Client(engine) as client:
        seats = [client.seat(handle) for handle in handles]
        rng = random.Random(seed)
        moves = 0
        for seat, view in itertools.islice(turns(seats), 600):
            step(seat, view, rng)
            moves += 1
        if moves < 600:  # the turns ran out: the game is over
            return
    raise AssertionError("the game does not end")


def on_screen_order(page: Page, *testids: str) -> list[float]:
    tops = []
    for testid in testids:
        box = page.get_by_test_id(testid).bounding_box()
        assert box is not None, testid
        tops.append(box["y"])
    return tops


@pytest.mark.timeout(240)
def test_phone_width_lobby_game_and_end(service: Service, browser: BrowserContext) -> None:
    page = browser.new_page()
    page.set_viewport_size(PHONE)
    errors: list[str] = []
    page.on("pageerror", lambda err: errors.append(str(err)))
    page.goto(service.web_url)
    expect(page.get_by_test_id("start-ai")).to_be_visible()
    assert page.evaluate("document.scrollingElement.scrollWidth <= innerWidth")
    shoot(page, "phone-lobby.png")

    seed = 5
    handles = mid_game(service.engine, seed)
    open_seat(page, service.web_url, handles[0])
    fits_the_width(page)
    legend = page.get_by_test_id("legend")
    expect(legend.get_by_test_id("legend-flags")).to_contain_text("won by you")
    expect(legend.get_by_test_id("legend-flags")).to_contain_text("open")
    for colour in ("Red", "Orange", "Yellow", "Green", "Blue", "Purple"):
        expect(legend.get_by_test_id("legend-colours")).to_contain_text(colour)
    # Both seats hold a flag: both won-flag tokens are on the board, as the legend shows them.
    expect(page.locator(".flags .flag-token.won-mine")).not_to_have_count(0)
    expect(page.locator(".flags .flag-token.won-theirs")).not_to_have_count(0)
    printed = set(page.locator(".flags .tactic .value").all_inner_texts())
    assert printed and printed <= TACTIC_NAMES, printed
    shoot(page, "phone-mid.png")
    for width in (320, 480, 600, 800, 1024):  # a small phone, a phone on its side, tablets
        page.set_viewport_size({"width": width, "height": 844})
        fits_the_width(page)
    page.set_viewport_size(PHONE)

    play_out(service.engine, handles, seed)
    expect(page.get_by_test_id("result")).to_be_visible(timeout=30_000)
    expect(page.get_by_test_id("review-moves")).to_be_visible(timeout=30_000)
    expect(page.get_by_test_id("review-graph")).to_be_visible(timeout=60_000)  # the AI's review
    fits_the_width(page)
    me, moves = on_screen_order(page, "player-me", "review-moves")
    assert me < moves, "your own bar sits below the list of every move"
    shoot(page, "phone-end.png")
    assert not errors, errors
