"""A game whose tab was closed is kept by the browser and taken up from the lobby."""

from __future__ import annotations

import pytest
from playwright.sync_api import BrowserContext, Page, expect

from .pages import Service


def match_in_tab(page: Page) -> str:
    return str(page.evaluate("JSON.parse(sessionStorage.getItem('battleline.session')).matchId"))


@pytest.mark.timeout(120)
def test_a_game_whose_tab_was_closed_is_taken_up_again(service: Service,
                                                       browser: BrowserContext) -> None:
    """A tab closed in the middle of a game took the seat's token with it (sessionStorage
    is the tab's): the game ran on to a loss on time. The browser keeps the seat until
    the game ends, and the lobby of any of its tabs offers to take it up again."""
    first = browser.new_page()
    first.goto(service.web_url)
    expect(first.get_by_test_id("kept-games")).to_have_count(0)  # nothing kept yet
    first.get_by_test_id("level-1").check()
    first.get_by_test_id("start-ai").click()
    expect(first.get_by_test_id("status")).to_have_attribute("data-phase", "playing")
    match_id = match_in_tab(first)
    first.close()

    second = browser.new_page()
    second.goto(service.web_url)
    kept = second.get_by_test_id("kept-games")
    expect(kept).to_contain_text("Against AI level 1")
    kept.get_by_test_id("resume").click()
    expect(second.get_by_test_id("status")).to_have_attribute("data-phase", "playing")
    assert match_in_tab(second) == match_id
    second.on("dialog", lambda dialog: dialog.accept())  # "Resign this match?"
    second.get_by_test_id("resign").click()
    expect(second.get_by_test_id("result")).to_be_visible()
    assert second.evaluate("localStorage.getItem('battleline.games')") == "[]"  # over: gone
