"""A game whose tab was closed is kept by the browser and taken up from the lobby."""

from __future__ import annotations

import pytest
from playwright.sync_api import BrowserContext, Page, expect

from battleline_client.client import Client
from battleline_client.common import SeatHandle

from .pages import Service, playing_the_ai


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


@pytest.mark.timeout(120)
def test_a_kept_game_that_ended_while_no_tab_had_it_is_not_offered(
        service: Service, browser: BrowserContext) -> None:
    """A kept game that ended while no tab had it open (resigned from elsewhere, lost on
    time, expired) stayed in the lobby until it was taken up, only to show its end. The
    lobby asks each kept seat first and offers only games going on."""
    first = playing_the_ai(browser, service)
    seat = first.evaluate("JSON.parse(sessionStorage.getItem('battleline.session'))")
    first.evaluate("""() => {  // a seat the engine never knew, kept beside it
      const games = JSON.parse(localStorage.getItem('battleline.games'));
      games.push({...games[0], matchId: 'Zz0000000000000000', token: 'Zz0000000000000000.x'});
      localStorage.setItem('battleline.games', JSON.stringify(games));
    }""")
    first.close()
    with Client(service.engine) as client:
        client.resign(SeatHandle(seat["matchId"], seat["token"], 0))

    second = browser.new_page()
    second.goto(service.web_url)
    expect(second.get_by_test_id("start-ai")).to_be_visible()
    expect(second.get_by_test_id("kept-games")).to_have_count(0)  # listed, then dropped
    assert second.evaluate("localStorage.getItem('battleline.games')") == "[]"
