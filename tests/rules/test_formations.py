"""Formations and their order, per ruleset (RULINGS.md, "Formations")."""

from __future__ import annotations

import pytest

from battleline_rules import RULESETS, best_formation, parse_card

STANDARD = RULESETS["standard"]
DECK52 = RULESETS["deck52"]


def strength(text: str, ruleset: str = "standard", fog: bool = False) -> int:
    cards = [parse_card(w) for w in text.split()]
    formation = best_formation(RULESETS[ruleset], cards, 0, 0, fog)
    assert formation is not None
    return formation.strength


def category(text: str, ruleset: str = "standard", fog: bool = False) -> str:
    rules = RULESETS[ruleset]
    formation = best_formation(rules, [parse_card(w) for w in text.split()], 0, 0, fog)
    assert formation is not None
    return "fog" if formation.category < 0 else rules.category_names[formation.category]


@pytest.mark.parametrize(
    ("cards", "name"),
    [
        ("R4 R5 R6", "wedge"),
        ("R6 B6 G6", "phalanx"),
        ("R1 R5 R9", "battalion"),
        ("R4 B5 G6", "skirmish"),
        ("R4 B5 G7", "host"),
        ("R9 R10 R1", "battalion"),  # 1 is low only: 9-10-1 is no run
        ("B9 R10 G1", "host"),
        ("R1 R2 R3", "wedge"),
        ("R3 R1 R2", "wedge"),  # order inside a formation never matters
    ],
)
def test_standard_categories(cards: str, name: str) -> None:
    assert category(cards) == name


def test_standard_order_strongest_first() -> None:
    ordered = ["R1 R2 R3", "R10 B10 G10", "R2 R5 R10", "R8 B9 G10", "R10 B10 G9"]
    strengths = [strength(c) for c in ordered]
    # A weaker category loses whatever its sum: wedge 6 beats phalanx 30.
    assert strengths[0] > strengths[1] > strengths[2] > strengths[3] > strengths[4]


def test_same_category_higher_sum_wins() -> None:
    assert strength("R7 B7 G7") > strength("R6 B6 G6")
    assert strength("R7 B9 G2") > strength("R7 B9 G1")


def test_deck52_straight_beats_flush() -> None:
    assert category("S5 H6 D7", "deck52") == "straight"
    assert category("S2 S9 SK", "deck52") == "flush"
    assert strength("S2 H3 D4", "deck52") > strength("SJ SQ S9", "deck52")
    assert strength("S7 H7 D7", "deck52") > strength("SJ HQ DK", "deck52")
    assert strength("SJ SQ SK", "deck52") > strength("S7 H7 D7", "deck52")


def test_mud_four_cards_use_the_same_categories() -> None:
    assert category("R4 R5 R6 R7") == "wedge"
    assert category("R4 B4 G4 Y4") == "phalanx"
    assert category("R4 R5 R6 R8") == "battalion"
    assert category("R4 B5 G6 Y7") == "skirmish"


def test_fog_counts_the_sum_only() -> None:
    assert category("R4 R5 R6", fog=True) == "fog"
    assert strength("R10 B9 G1", fog=True) > strength("R4 R5 R6", fog=True)
    assert strength("R10 B9 G1 Y2", fog=True) == 22  # Fog and Mud together: 4 cards, sum


def test_leader_takes_its_best_colour_and_value() -> None:
    assert category("ALEXANDER R9 R10") == "wedge"
    assert strength("ALEXANDER R9 R10") == strength("R8 R9 R10")
    # With a phalanx of 10s possible too, the wedge 8-9-10 is still stronger.
    assert strength("DARIUS R10 B10") == strength("R10 B10 G10")


def test_cavalry_is_an_eight_of_any_colour() -> None:
    assert strength("CAVALRY R7 R9") == strength("R7 R8 R9")
    assert category("CAVALRY R8 B8") == "phalanx"
    assert category("CAVALRY R4 R5") == "battalion"


def test_shield_bearers_are_one_two_or_three() -> None:
    assert strength("SHIELD R2 R4") == strength("R2 R3 R4")
    assert category("SHIELD R5 R6") == "battalion"
    assert strength("SHIELD ALEXANDER R2") == strength("R2 R3 R4")


def test_best_reachable_with_missing_cards() -> None:
    everything = STANDARD.troop_mask
    reach = best_formation(STANDARD, [parse_card("R9")], 2, everything, False)
    assert reach is not None
    assert reach.total == 27 and STANDARD.category_names[reach.category] == "wedge"
    none_left = best_formation(STANDARD, [parse_card("R9")], 2, 0, False)
    assert none_left is None
