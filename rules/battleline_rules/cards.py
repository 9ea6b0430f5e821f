"""Cards as small integers, with lookup tables and their text notation.

Every card of every ruleset has one id in a single space, so a set of cards is
an int bitmask and "is this card available" is one `&`.

- Standard troops: ids 0..59, ``colour * 10 + (value - 1)``, colours R O Y G B P.
- Tactics: ids 60..69.
- deck52 cards: ids 70..117, ``70 + suit * 12 + (rank - 2)``, suits S H D C,
  ranks 2..13 written 2..10, J, Q, K.
- Two placeholders stand for a card a viewer may not see: ``UNKNOWN_TROOP``
  and ``UNKNOWN_TACTIC`` (hands and decks still show which deck a card is from).
- ``NO_CARD`` is no card at all (what an action that drew nothing drew): never a
  placeholder, so a hidden draw and no draw read apart.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import IntEnum
from typing import Final

from .errors import shown

STANDARD_COLOURS: Final = "ROYGBP"
DECK52_SUITS: Final = "SHDC"
RANK_LETTERS: Final = {11: "J", 12: "Q", 13: "K"}

TACTIC_BASE: Final = 60
DECK52_BASE: Final = 70
CARD_COUNT: Final = 118

UNKNOWN_TROOP: Final = -1
UNKNOWN_TACTIC: Final = -2
NO_CARD: Final = -3


class Tactic(IntEnum):
    """The ten tactics cards; the value is the card id."""

    ALEXANDER = 60
    DARIUS = 61
    CAVALRY = 62
    SHIELD = 63
    FOG = 64
    MUD = 65
    SCOUT = 66
    REDEPLOY = 67
    DESERTER = 68
    TRAITOR = 69


LEADERS: Final = frozenset({Tactic.ALEXANDER, Tactic.DARIUS})
MORALE: Final = frozenset({Tactic.ALEXANDER, Tactic.DARIUS, Tactic.CAVALRY, Tactic.SHIELD})
ENVIRONMENT: Final = frozenset({Tactic.FOG, Tactic.MUD})
GUILE: Final = frozenset({Tactic.SCOUT, Tactic.REDEPLOY, Tactic.DESERTER, Tactic.TRAITOR})

# Per-card tables, indexed by card id. Tactics have colour -1 and value 0.
COLOUR: Final[list[int]] = [-1] * CARD_COUNT
VALUE: Final[list[int]] = [0] * CARD_COUNT
for _c in range(6):
    for _v in range(1, 11):
        COLOUR[_c * 10 + _v - 1] = _c
        VALUE[_c * 10 + _v - 1] = _v
for _s in range(4):
    for _r in range(2, 14):
        COLOUR[DECK52_BASE + _s * 12 + _r - 2] = _s
        VALUE[DECK52_BASE + _s * 12 + _r - 2] = _r

STANDARD_TROOPS: Final = tuple(range(60))
TACTICS: Final = tuple(range(TACTIC_BASE, TACTIC_BASE + 10))
DECK52_CARDS: Final = tuple(range(DECK52_BASE, DECK52_BASE + 48))


TACTIC_CARDS: Final = frozenset((*TACTICS, UNKNOWN_TACTIC))


def is_tactic(card: int) -> bool:
    """True for the ten tactics cards and the unknown-tactic placeholder."""
    return card in TACTIC_CARDS


def troop_id(colour: int, value: int) -> int:
    """The id of a standard troop card."""
    return colour * 10 + value - 1


def deck52_id(suit: int, rank: int) -> int:
    """The id of a deck52 card."""
    return DECK52_BASE + suit * 12 + rank - 2


def mask_of(cards: Iterable[int]) -> int:
    """The bitmask of an iterable of card ids (placeholders ignored)."""
    mask = 0
    for card in cards:
        if card >= 0:
            mask |= 1 << card
    return mask


def card_name(card: int) -> str:
    """Text notation of one card: ``R7``, ``HQ``, ``FOG``, ``?troop``."""
    if card == UNKNOWN_TROOP:
        return "?troop"
    if card == UNKNOWN_TACTIC:
        return "?tactic"
    if card < 0:  # NO_CARD, say: a negative index would name a real card
        raise ValueError(f"no card has the id {card}")
    if TACTIC_BASE <= card < DECK52_BASE:
        return Tactic(card).name
    value = VALUE[card]
    if card >= DECK52_BASE:
        return DECK52_SUITS[COLOUR[card]] + RANK_LETTERS.get(value, str(value))
    return STANDARD_COLOURS[COLOUR[card]] + str(value)


_BY_NAME: Final[dict[str, int]] = {card_name(c): c for c in range(CARD_COUNT)}
_BY_NAME.update({"?TROOP": UNKNOWN_TROOP, "?TACTIC": UNKNOWN_TACTIC})
for _s, _letter in enumerate(DECK52_SUITS):
    for _r in (11, 12, 13):
        _BY_NAME[f"{_letter}{_r}"] = deck52_id(_s, _r)
_BY_NAME.update({"LEADER-A": Tactic.ALEXANDER, "LEADER-D": Tactic.DARIUS})


def parse_card(text: str) -> int:
    """Parse one card name (case-insensitive); raises ValueError naming the bad token."""
    card = _BY_NAME.get(text.strip().upper())
    if card is None:
        raise ValueError(
            f"unknown card {shown(text)}: troops are a colour R O Y G B P and 1-10 (R7), "
            "deck52 cards a suit S H D C and 2-10, J, Q, K (HQ), tactics by name (FOG)"
        )
    return card
