"""What the browser tests do on the page: wait for a turn or an answer, take screenshots."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from playwright.sync_api import BrowserContext, Locator, Page, expect

from battleline_client.common import SeatHandle


@dataclass(frozen=True)
class Service:
    """A running `battleline serve`."""

    web_url: str  # the page and the Connect/gRPC-Web bridge, on one origin
    engine: str  # the gRPC engine, for setting up positions with the Python client


# What a player does when it is its turn, in this order: claim, draw, play at a highlighted
# flag, press an offered button (pass, end, Scout, Redeploy to the discards, put back), pick
# a highlighted card on the board (Deserter, Traitor, Redeploy, Mud), pick a card in hand.
STEPS = [
    "button[data-testid^='claim-']",
    "button[data-testid^='deck-']:enabled",
    "button.flag-token.target",
    "button[data-testid='action-button']",
    ".board button.card[aria-pressed='false']",
    "button[data-testid='hand-card'][aria-pressed='false']",
]


def shoot(page: Page, name: str) -> None:
    """With BATTLELINE_SCREENSHOTS=DIR, save the whole page as DIR/name."""
    folder = os.environ.get("BATTLELINE_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / name), full_page=True)


def wait_for_turn_or_end(page: Page) -> bool:
    """True when it is our turn, False when the match is over."""
    page.wait_for_selector(
        "[data-testid='status'][data-my-turn='yes'], [data-testid='result']", timeout=90_000)
    return page.get_by_test_id("result").count() == 0


def settle(page: Page) -> None:
    """Wait for a sent action's answer (the page shows "Sending…" meanwhile)."""
    expect(page.get_by_test_id("status")).not_to_have_text("Sending…", timeout=30_000)


def first_step(page: Page, steps: list[str] = STEPS) -> Locator | None:
    for selector in steps:
        found = page.locator(selector)
        if found.count() > 0:
            return found.first
    return None


def open_seat(page: Page, url: str, seat: SeatHandle) -> None:
    """Open the page holding `seat`, as a reload of a tab that had joined it would."""
    page.goto(url)
    session = {"matchId": seat.match_id, "token": seat.token, "inviteCode": ""}
    page.evaluate("s => sessionStorage.setItem('battleline.session', s)", json.dumps(session))
    page.reload()
    expect(page.get_by_test_id("status")).to_have_attribute("data-phase", "playing")


def playing_the_ai(browser: BrowserContext, service: Service) -> Page:
    """A new tab of `browser` playing the hosted AI at level 1, its game begun."""
    page = browser.new_page()
    page.goto(service.web_url)
    page.get_by_test_id("level-1").check()
    page.get_by_test_id("start-ai").click()
    expect(page.get_by_test_id("status")).to_have_attribute("data-phase", "playing")
    return page
