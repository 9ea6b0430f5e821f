"""The search processes' entry point: a failing search does not stall the match."""

from __future__ import annotations

import logging
import random
import time

import pytest

from battleline_ai.decide import decide, decide_by, needs_search
from battleline_ai.endgame import solve
from battleline_rules import Kind, Phase, dump_position, new_game, parse_action
from tests.ai.endgames import endgame_positions


def test_a_failing_search_falls_back_to_the_heuristic(caplog: pytest.LogCaptureFixture) -> None:
    view = new_game("standard", seed=3).view(0)
    with caplog.at_level(logging.ERROR, logger="battleline.ai"):
        decision = decide_by(dump_position(view), "ismcts:leaf=none-such", time.monotonic() + 5, 1)
    assert parse_action(decision.action) in view.legal_actions()
    assert decision.iterations == 0  # answered by the rule-based bot, not a search
    assert "the heuristic answers this move" in caplog.text


def test_level5_plays_a_proven_win_through_the_search_entry() -> None:
    """The hosted AI searches through `IsmctsBot.search`: the endgame applies there too."""
    for view in endgame_positions(12):
        won = solve(view)
        if won is None or view.phase.name != "PLAY":
            continue
        decision = decide_by(dump_position(view), "ismcts:level=5", time.monotonic() + 5, 1)
        assert parse_action(decision.action) == won
        assert decision.value == 1.0 and decision.iterations == 0
        return
    pytest.fail("no PLAY position with a proven win among the seeded endgames")


def test_only_a_searching_levels_choices_in_the_play_step_need_a_search_process() -> None:
    """The worker makes every other move at once instead of queueing it for a search
    process (sixth audit: a draw or a claim waited for a process as long as a search)."""
    state, rng = new_game("standard", seed=4), random.Random(4)
    seen: dict[tuple[Phase, bool], list[bool]] = {}
    while not state.is_over and len(seen) < 4:
        view = state.view(state.current_player)
        actions = view.legal_actions()
        key = (view.phase, len(actions) > 1 and actions[0].kind is not Kind.CLAIM)
        position = dump_position(view)
        seen.setdefault(key, [needs_search(position, "ismcts:level=5"),
                              needs_search(position, "ismcts:level=3"),
                              needs_search(position, "heuristic")])
        state.apply(rng.choice(state.legal_actions()))
    assert seen[(Phase.PLAY, True)] == [True, False, False]
    assert seen[(Phase.FINISH, True)] == [False, False, False]  # which deck to draw from


@pytest.mark.parametrize("spec", ["ismcts:level=5", "heuristic"])
def test_a_position_with_nothing_to_do_is_refused_as_such(spec: str) -> None:
    """AiService.Suggest answers a ValueError with INVALID_ARGUMENT bad-position; a
    review found a finished position raising IndexError (INTERNAL) instead."""
    state, rng = new_game("standard", seed=5), random.Random(5)
    while not state.is_over:
        state.apply(rng.choice(state.legal_actions()))
    with pytest.raises(ValueError, match="nothing to do"):
        decide(dump_position(state.view(0)), spec, None, 1)
