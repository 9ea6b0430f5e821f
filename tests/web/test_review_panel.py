"""The end screen's AI review in Chromium: a match played to its end through the Python
client, then opened in the page as one of its seats: the graph has a line per seat and
the costliest moves name the move the AI preferred, as RecordService.GetReview says."""

from __future__ import annotations

import json
import math
import random

import pytest
from playwright.sync_api import BrowserContext, expect

from battleline_client.client import Client
from tests.ai.service_harness import play_random

from .pages import Service, shoot


@pytest.mark.timeout(300)
def test_the_end_screen_shows_the_ais_review(service: Service, browser: BrowserContext) -> None:
    with Client(service.engine, timeout=60) as client:
        created = client.create(opponent="local", clock="none", seed=1507)
        assert created.other is not None
        play_random(client, [client.seat(created.seat), client.seat(created.other)],
                    random.Random(1507))
        review = client.review(created.match_id).review
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda err: errors.append(str(err)))
    page.goto(service.web_url)
    session = {"matchId": created.match_id, "token": created.seat.token, "inviteCode": ""}
    page.evaluate("s => sessionStorage.setItem('battleline.session', s)", json.dumps(session))
    page.reload()
    expect(page.get_by_test_id("status")).to_have_attribute("data-phase", "finished")

    panel = page.get_by_test_id("ai-review")
    expect(panel.get_by_test_id("review-graph")).to_be_visible(timeout=30_000)
    for seat in (0, 1):
        points = panel.get_by_test_id(f"review-line-{seat}").get_attribute("points") or ""
        assert len(points.split()) == sum(1 for m in review.moves if m.seat == seat + 1)
    costly = panel.get_by_test_id("costly-move")
    expect(costly).to_have_count(len(review.costliest))
    for item, number in zip(costly.all_inner_texts(), review.costliest, strict=True):
        move = review.moves[number - 1]
        assert item.startswith(f"Move {number}, ") and move.preferred_action in item, item
        shown = math.floor(100 * (move.estimate_after + move.loss) + 0.5)  # as Math.round
        worth = f"{move.preferred_action} (→ {shown}%, "
        assert worth in item, item  # what the preferred move was worth, not only the gap
    # In one step inside the page: the page redraws whole on every change, so a node found
    # from here may be detached before Playwright scrolls to it.
    page.evaluate("document.querySelector('[data-testid=ai-review]').scrollIntoView()")
    shoot(page, "review.png")
    assert not errors, errors
