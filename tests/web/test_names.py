""""You" on the page is decided by seat, never by a name: an opponent that names itself
"You" (the engine takes any printable name) and wins must not make the loser's page say
"You win!". The page labels its own seat "You"; an opponent's name that reads as "you" in
any case, or in letters of other scripts drawn alike (Lisu, Cherokee, small capitals:
fifteenth audit), is shown with " (opponent)" after it, everywhere it is named."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import BrowserContext, expect

from battleline_client.client import Client

from .pages import Service


@pytest.mark.timeout(60)
@pytest.mark.parametrize("impostor", ["You", "yOU", "\ua4ecou", "\u13a9ou", "\u028f\u1d0f\u1d1c"])
def test_an_opponent_named_you_wins_and_the_page_says_you_lost(
        service: Service, browser: BrowserContext, impostor: str) -> None:
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda err: errors.append(str(err)))
    page.goto(service.web_url)
    page.get_by_test_id("name").fill("Ann")
    page.get_by_test_id("invite").click()
    link = page.get_by_test_id("invite-link").input_value()
    code = parse_qs(urlsplit(link).fragment)["join"][0]
    with Client(service.engine, timeout=30) as client:
        client.join(invite_code=code, name=impostor)  # the opponent, named to pass for the viewer
    expect(page.get_by_test_id("status")).to_have_attribute("data-phase", "playing")

    page.once("dialog", lambda dialog: dialog.accept())  # "Resign this match?"
    page.get_by_test_id("resign").click()
    expect(page.get_by_test_id("status")).to_have_attribute("data-phase", "finished")

    shown = f"{impostor} (opponent)"
    result = page.get_by_test_id("result")
    expect(result.get_by_role("heading")).to_have_text(f"You lost: {shown} wins")
    expect(result).to_contain_text(f"Winner: {shown}, by resignation.")
    expect(result).not_to_contain_text("You win")
    expect(page.get_by_test_id("player-me").get_by_role("heading")).to_have_text("You")
    expect(page.get_by_test_id("player-them").get_by_role("heading")).to_have_text(shown)
    legend = page.get_by_test_id("legend-flags")
    expect(legend).to_contain_text("won by you")
    expect(legend).to_contain_text(f"won by {shown}")
    expect(page.get_by_test_id("review-moves")).to_contain_text("You: resigned")
    assert not errors, errors
