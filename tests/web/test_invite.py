"""Playing a friend: the invitation link joins the match, each side sees the other's moves
from its Watch stream (reopened after a failure), a reload resumes the seat, and the page
fits a phone's width."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import BrowserContext, Page, Route, expect

from .pages import Service, playing_the_ai, settle


def play_one_card(page: Page) -> str:
    """Play the first card of the hand at the first highlighted flag, then draw; its name."""
    card = page.get_by_test_id("hand-card").first
    name = card.get_attribute("aria-label") or ""
    card.click()
    page.locator("button.flag-token.target").first.click()
    settle(page)
    page.get_by_test_id("deck-troop").click()
    settle(page)
    return name


def hand_names(page: Page) -> list[str | None]:
    return [card.get_attribute("aria-label")
            for card in page.locator("[data-testid='hand'] .card").all()]


@pytest.mark.timeout(120)
def test_invite_link_watch_and_reload(service: Service, browser: BrowserContext) -> None:
    host = browser.new_page()
    host.goto(service.web_url)
    host.get_by_test_id("name").fill("Ann")
    host.get_by_test_id("invite").click()
    link = host.get_by_test_id("invite-link").input_value()
    assert re.fullmatch(re.escape(service.web_url) + r"#join=[A-Za-z0-9]{10}", link), link
    expect(host.get_by_test_id("status")).to_contain_text("Waiting for the other player")

    friend = browser.new_page()  # its own tab: its own sessionStorage, its own seat
    friend.set_viewport_size({"width": 375, "height": 800})
    watches: list[Route] = []

    def drop_first_watch(route: Route) -> None:
        """The friend's first Watch stream fails; the page must open it again by itself."""
        watches.append(route)
        if len(watches) == 1:
            route.abort("connectionreset")
        else:
            route.continue_()

    friend.route("**/battleline.v1.WatchService/Watch", drop_first_watch)
    friend.goto(link)
    for page in (host, friend):
        expect(page.get_by_test_id("status")).to_have_attribute("data-phase", "playing")
    expect(friend.get_by_test_id("player-them")).to_contain_text("Ann")
    assert "#join" not in friend.url  # the code is used once, not left in the address

    mover, other = (host, friend) if host.get_by_test_id("hand-card").count() else (friend, host)
    expect(mover.get_by_test_id("status")).to_have_attribute("data-my-turn", "yes")
    played = play_one_card(mover)
    # The other side learns of it from its Watch stream only.
    expect(other.get_by_test_id("log")).to_contain_text(f"play {played} at flag")
    expect(other.get_by_test_id("status")).to_have_attribute("data-my-turn", "yes")

    hand = hand_names(other)
    other.reload()  # the seat token is in sessionStorage: the same seat, the same hand
    expect(other.get_by_test_id("status")).to_have_attribute("data-my-turn", "yes")
    assert hand_names(other) == hand
    expect(other.get_by_test_id("log")).to_contain_text(f"play {played} at flag")

    assert len(watches) >= 2

    # At 375 px the flags stack: neither the page nor the board scrolls sideways.
    assert friend.evaluate("document.documentElement.scrollWidth") <= 375
    assert friend.get_by_test_id("board").evaluate("b => b.scrollWidth <= b.clientWidth")


@pytest.mark.timeout(120)
def test_cancelling_an_invitation_ends_the_match_and_its_link(service: Service,
                                                             browser: BrowserContext) -> None:
    host = browser.new_page()
    host.goto(service.web_url)
    host.get_by_test_id("invite").click()
    link = host.get_by_test_id("invite-link").input_value()
    expect(host.get_by_test_id("status")).to_contain_text("Waiting for the other player")
    host.get_by_test_id("leave").click()  # "Cancel the match"
    expect(host.get_by_test_id("invite")).to_be_visible()  # back at the start

    friend = browser.new_page()
    friend.goto(link)  # the engine cancelled the match: the link no longer seats anyone
    expect(friend.get_by_test_id("error")).to_contain_text("cancelled")


@pytest.mark.timeout(60)
def test_a_link_does_not_swap_the_match_in_play_without_the_players_consent(
        service: Service, browser: BrowserContext) -> None:
    """Fifteenth audit: another site that opened the page set its hash to an invitation of
    its own; the tab joined that match at once, and the match in play, its seat token
    gone, was lost on the clock. The player is asked first, and a refusal keeps the match.
    (The page also sends Cross-Origin-Opener-Policy: such a site keeps no handle on it.)"""
    friend_of_theirs = browser.new_page()
    friend_of_theirs.goto(service.web_url)
    friend_of_theirs.get_by_test_id("invite").click()
    link = friend_of_theirs.get_by_test_id("invite-link").input_value()
    code = link.split("#join=")[1]

    page = playing_the_ai(browser, service)
    held = page.evaluate("sessionStorage.getItem('battleline.session')")
    asked: list[str] = []

    def refuse(dialog: object) -> None:
        asked.append(dialog.message)  # type: ignore[attr-defined]
        dialog.dismiss()  # type: ignore[attr-defined]

    page.once("dialog", refuse)
    page.evaluate(f"location.hash = '#join={code}'")
    expect(page.get_by_test_id("status")).to_have_attribute("data-phase", "playing")
    page.wait_for_function("!location.hash")
    assert asked and "Leave the match you are playing" in asked[0]
    assert page.evaluate("sessionStorage.getItem('battleline.session')") == held
    expect(friend_of_theirs.get_by_test_id("status")).to_contain_text(
        "Waiting for the other player")


def test_an_invitation_whose_answer_was_lost_is_asked_for_again(service: Service,
                                                                browser: BrowserContext) -> None:
    """The engine made the match, the connection dropped before its answer: the page
    sends the same create again (its seat secret with it) and gets the same match, not a
    second one held against the player until it expired."""
    host = browser.new_page()
    bodies: list[bytes] = []
    answers: list[bytes] = []

    def lose_first_answer(route: Route) -> None:
        bodies.append(route.request.post_data_buffer or b"")
        answer = route.fetch()  # the engine applies it
        answers.append(answer.body())
        if len(answers) == 1:
            route.abort("connectionreset")
        else:
            route.fulfill(response=answer)

    host.route("**/battleline.v1.LobbyService/CreateMatch", lose_first_answer)
    host.goto(service.web_url)
    host.get_by_test_id("invite").click()
    link = host.get_by_test_id("invite-link").input_value()
    expect(host.get_by_test_id("status")).to_contain_text("Waiting for the other player")
    assert len(bodies) == 2 and bodies[0] == bodies[1]
    assert answers[0] == answers[1]  # the same match, seat, token and invite code
    assert link.rsplit("=", 1)[1].encode() in answers[0]
