"""Card, action and position notation: exact round trips, precise refusals."""

from __future__ import annotations

import pytest

from battleline_rules import (
    MAX_REPEAT,
    SPECTATOR,
    card_name,
    dump_position,
    format_action,
    load_position,
    new_game,
    parse_action,
    parse_card,
)
from battleline_rules.cards import NO_CARD


def test_every_card_name_round_trips() -> None:
    for card in [*range(0, 70), *range(70, 118), -1, -2]:
        assert parse_card(card_name(card)) == card
    assert parse_card("hq") == parse_card("H12") == parse_card("HQ")
    with pytest.raises(ValueError, match="unknown card"):
        parse_card("X9")
    with pytest.raises(ValueError, match="no card has the id -3"):
        card_name(NO_CARD)  # an event that drew nothing: it once read as G11


@pytest.mark.parametrize(
    "text",
    ["play R7@3", "play SCOUT", "redeploy R7@3 5", "redeploy FOG@3 discard", "deserter B4@2",
     "traitor B4@2 6", "claim 4", "draw troop", "draw tactic", "scout-draw tactic",
     "scout-return R3", "mud-discard R4@6", "pass", "end"],
)
def test_action_notation_round_trips(text: str) -> None:
    assert format_action(parse_action(text)) == text


@pytest.mark.parametrize(
    ("text", "message"),
    [("jump R7@3", "unknown action"), ("play R7@0", "numbered from 1"), ("claim", "takes 1"),
     ("draw hand", "troop"), ("deserter B4", "CARD@FLAG"), ("play Z1@2", "unknown card"),
     ("play R7@\u0661", "numbered from 1"), ("claim \uff14", "numbered from 1")],
)
def test_bad_action_text_says_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_action(text)


@pytest.mark.parametrize("ruleset", ["standard", "basic", "deck52"])
def test_positions_and_views_round_trip(ruleset: str) -> None:
    state = new_game(ruleset, seed=11)
    for viewed in (state, state.view(0), state.view(1), state.view(SPECTATOR)):
        text = dump_position(viewed)
        assert dump_position(load_position(text)) == text


def _replace(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new, 1)


def test_inconsistent_positions_are_refused() -> None:
    text = dump_position(new_game("standard", seed=2))
    hand = next(line for line in text.splitlines() if line.startswith("hand 0:"))
    first = hand.split()[2]
    with pytest.raises(ValueError, match="two places"):
        load_position(_replace(text, hand, hand + " " + first))
    with pytest.raises(ValueError, match="unaccounted"):
        load_position(_replace(text, hand, hand.replace(" " + first, "", 1)))
    with pytest.raises(ValueError, match="unknown phase"):
        load_position(_replace(text, "phase=play", "phase=bogus"))
    with pytest.raises(ValueError, match="does not match"):
        load_position(_replace(text, "phase=play", "phase=mud_discard"))
    with pytest.raises(ValueError, match="lacks the line"):
        load_position("\n".join(line for line in text.splitlines() if "flag 3" not in line))


@pytest.mark.parametrize("status", ["", "won", "won 0 1", "over", "playing 1"])
def test_a_status_line_of_too_few_or_too_many_words_is_refused(status: str) -> None:
    """`status: won` with no seat (or none at all) raised IndexError, which a client
    drawing a hostile server's position did not catch (thirty-first audit)."""
    text = dump_position(new_game("standard", seed=2))
    with pytest.raises(ValueError, match="bad status"):
        load_position(_replace(text, "status: playing", f"status: {status}"))


def test_a_repeat_count_cannot_ask_for_millions_of_cards() -> None:
    """`CARD*N` stands for N cards: a few bytes could ask for gigabytes of them (a
    crafted file for `battleline analyze`, a hostile server's position for the TUI)."""
    view = dump_position(new_game("standard", seed=2).view(0))
    deck = next(line for line in view.splitlines() if line.startswith("deck troop:"))
    for count in ("71", "50000000", "\u0662"):  # past any deck; not an ASCII number
        with pytest.raises(ValueError, match="a card repeats 1 to 70 times"):
            load_position(_replace(view, deck, f"deck troop: ?troop*{count}"))
    assert MAX_REPEAT == 70


@pytest.mark.timeout(5)
def test_a_card_repeated_thousands_of_times_is_refused_in_linear_time() -> None:
    """A hostile server's or file's position may repeat a card thousands of times
    (a 0.4 MB position once kept the duplicate check busy for 25 s, a client's
    screen with it); the refusal must come at once, not after quadratic work."""
    text = dump_position(new_game("standard", seed=2))
    hand = next(line for line in text.splitlines() if line.startswith("hand 0:"))
    first = hand.split()[2]
    with pytest.raises(ValueError, match="cards in two places"):
        load_position(_replace(text, hand, hand + f" {first}*70" * 6000))


@pytest.mark.timeout(5)
def test_a_flag_with_more_environment_cards_than_fog_and_mud_is_refused_at_once() -> None:
    """Fifteenth audit: each environment card added rescanned the flag's list, so a
    position naming FOG 20,000 times at one flag took 3.3 s to refuse (600 KB: over 30 s);
    a flag holds Fog and Mud at most, and more is refused before any is added."""
    text = dump_position(new_game("standard", seed=2))
    flag = next(line for line in text.splitlines() if line.startswith("flag 1:"))
    assert flag == "flag 1: - | - | - | -"
    flooded = "flag 1: - | - | " + " ".join(["FOG/0"] * 200_000) + " | -"
    with pytest.raises(ValueError, match="at most 2 environment cards"):
        load_position(_replace(text, flag, flooded))
