"""The web page in a real browser: a full game against the hosted AI, played through the UI.

`battleline serve` runs as a subprocess (engine, embedded Redis, hosted AI, and the web
gateway serving the built page from services/gateway/battleline_gateway/site/); Debian's
Chromium (/usr/bin/chromium, never a downloaded browser) is driven with Playwright's sync
API (conftest.py). The test plays like a person would: picks a card and a highlighted
flag, claims what the page offers, draws; the first move by keyboard only. It ends on the
result screen and the review with every card revealed. The window is a desktop's, 1280x800
(tests/web/test_layout.py takes a phone's). With BATTLELINE_SCREENSHOTS=DIR it saves
lobby.png, start.png, mid.png, claim.png and end.png there (scripts/screenshots.py writes
docs/screenshots/ so).
"""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import BrowserContext, Page, expect

from .pages import Service, first_step, settle, shoot, wait_for_turn_or_end

CARD_NAME = re.compile(
    r"^((Red|Orange|Yellow|Green|Blue|Purple) \d+|Alexander, Leader|Darius, Leader|"
    r"Companion Cavalry|Shield Bearers|Fog|Mud|Scout|Redeploy|Deserter|Traitor)(, selected)?$")
RESULTS = {  # headline -> the line under it
    "You win!": re.compile(r"Winner: You, by \w[\w ()]+\.$"),
    "You lost: AI level 1 wins": re.compile(r"Winner: AI level 1, by \w[\w ()]+\.$"),
    "No winner: a draw": re.compile(r"Winner: nobody, by a draw\.$"),
}
CARD_OR_NONE = re.compile(r"hand at the end\s*(none|\S)")


def keyboard_move(page: Page) -> None:
    """Pick the first card with Enter (Escape drops it, Space picks it again), Shift+Tab back
    to a highlighted flag, Enter."""
    card = page.get_by_test_id("hand-card").first
    assert CARD_NAME.match(card.get_attribute("aria-label") or ""), card.get_attribute("aria-label")
    card.focus()
    picked = page.locator("button[data-testid='hand-card'][aria-pressed='true']")
    page.keyboard.press("Enter")
    expect(picked).to_have_count(1)
    page.keyboard.press("Escape")  # changed my mind; the focus stays on the card
    expect(picked).to_have_count(0)
    page.keyboard.press("Space")
    expect(picked).to_have_count(1)
    if page.locator("button.flag-token.target").count() == 0:
        return  # a tactic that is not played at a flag: the loop goes on with the mouse
    for _ in range(80):
        page.keyboard.press("Shift+Tab")
        if page.evaluate("document.activeElement.matches('button.flag-token.target')"):
            break
    else:
        raise AssertionError("no highlighted flag reached with the keyboard")
    label = page.evaluate("document.activeElement.getAttribute('aria-label')")
    assert re.match(r"^Flag [1-9]\b.*play here", label), label
    shoot(page, "start.png")  # a card picked, its flags highlighted, one of them focused
    page.keyboard.press("Enter")
    settle(page)


@pytest.mark.timeout(300)
def test_full_game_against_the_ai(service: Service, browser: BrowserContext) -> None:
    started = time.monotonic()
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda err: errors.append(str(err)))
    # The page's Content-Security-Policy must not block anything the page itself does.
    page.on("console", lambda message: errors.append(message.text)
            if "Content Security Policy" in message.text else None)
    page.goto(service.web_url)
    expect(page.get_by_test_id("start-ai")).to_be_visible()
    shoot(page, "lobby.png")
    page.get_by_test_id("level-1").check()
    page.get_by_test_id("start-ai").click()

    assert wait_for_turn_or_end(page), "the match ended before our first turn"
    expect(page.get_by_test_id("board").locator("[data-testid^='flag-']")).to_have_count(9)
    expect(page.get_by_test_id("player-them")).to_contain_text("AI level 1")
    # The engine's mark of the AI's seat (a name is only a player's word), on its seat only.
    expect(page.get_by_test_id("player-them").get_by_test_id("hosted-ai")).to_be_visible()
    expect(page.get_by_test_id("player-me").get_by_test_id("hosted-ai")).to_have_count(0)
    expect(page.get_by_test_id("legend-flags")).to_contain_text("won by AI level 1")
    expect(page.get_by_test_id("legend-colours")).to_contain_text("R Red")
    assert page.evaluate("document.scrollingElement.scrollWidth <= innerWidth")
    page.get_by_test_id("ask-hint").click()  # the hosted AI's suggestion, its card picked
    expect(page.get_by_test_id("advice")).to_contain_text(re.compile(r"The AI would play \w"))
    page.keyboard.press("Escape")
    keyboard_move(page)

    moves, claim_shot = 0, False
    while wait_for_turn_or_end(page):
        step = first_step(page)
        status = page.get_by_test_id("status").inner_text()
        assert step is not None, f"our turn but nothing to do: {status}"
        step.click()
        settle(page)
        moves += 1
        if moves == 20:
            shoot(page, "mid.png")
        if not claim_shot and page.get_by_test_id("proofs").count() > 0:
            shoot(page, "claim.png")  # the first claim offered, with its proof
            claim_shot = True
        # The live log has the newest move first, so it is never scrolled half out of sight.
        numbers = page.get_by_test_id("log").locator("li").evaluate_all(
            "items => items.map(item => item.value)")
        assert numbers == sorted(numbers, reverse=True), numbers
        assert moves < 600, "the game does not end"
        assert not page.get_by_test_id("error").count(), page.get_by_test_id("error").inner_text()

    # The result names the winner and how; about one game in ten between this naive player
    # and level 1 ends with neither side able to win, and the page must then say so.
    result = page.get_by_test_id("result")
    headline = result.get_by_role("heading").inner_text()
    assert headline in RESULTS, headline
    assert RESULTS[headline].match(result.locator("p").inner_text()), result.inner_text()
    review = page.get_by_test_id("review")
    expect(review).to_be_visible(timeout=30_000)
    # Every card revealed: both final hands and the decks are named, no card is face down.
    assert review.locator(".card.hidden").count() == 0
    assert "hidden" not in review.inner_text()
    for seat in (0, 1):  # both hands at the end, by name (a hand may be empty after a long game)
        expect(review.get_by_test_id(f"review-hand-{seat}")).to_contain_text(CARD_OR_NONE)
    moves_list = review.get_by_test_id("review-moves")
    draws = moves_list.locator("li", has_text="AI level 1: draw from the")
    assert draws.count() > 5
    assert all(": " in text.split("deck")[-1] for text in draws.all_inner_texts())
    expect(page.get_by_test_id("review-graph")).to_be_visible(timeout=60_000)  # the AI's review
    # Both places read in one step inside the page: it redraws whole on every change (the
    # review arriving is one), so two separate lookups may see two different drawings.
    tops = page.evaluate("""() => ['player-me', 'review-moves'].map(id => {
        const node = document.querySelector(`[data-testid=${id}]`);
        return node ? node.getBoundingClientRect().top : null; })""")
    assert None not in tops, tops
    assert tops[0] < tops[1], "your own bar sits below the list of every move"
    shoot(page, "end.png")
    assert not errors, errors
    print(f"browser game: {moves + 1} of our steps, {time.monotonic() - started:.0f} s")
