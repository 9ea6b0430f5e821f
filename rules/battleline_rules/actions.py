"""Actions and their text notation.

An action is a small named tuple; flags are 0-based in code and 1-based in
text. Every action the rules core produces formats to text and parses back
to the identical tuple:

    play R7@3        troop, morale or environment card to flag 3
    play SCOUT       Scout (then scout-draw x3, scout-return x2)
    redeploy R7@3 5  move own card from flag 3 to flag 5 (or ``discard``)
    deserter B4@2    discard the opponent's card at flag 2
    traitor B4@2 6   take the opponent's troop from flag 2 to own flag 6
    claim 4          claim flag 4
    draw troop       draw from the troop (or ``tactic``) deck, ending the turn
    scout-draw troop draw one of Scout's three cards
    scout-return R3  put a card from hand back on top of its deck
    mud-discard R4@6 discard a card from a side left with 4 cards by Mud leaving
    pass             play nothing (only when no troop can be placed)
    end              end the turn when no draw is possible
"""

from __future__ import annotations

from enum import IntEnum
from typing import NamedTuple

from .cards import CARD_COUNT, Tactic, card_name, parse_card
from .errors import shown


class Kind(IntEnum):
    PLAY = 0
    REDEPLOY = 1
    DESERTER = 2
    TRAITOR = 3
    CLAIM = 4
    DRAW = 5
    SCOUT_DRAW = 6
    SCOUT_RETURN = 7
    MUD_DISCARD = 8
    PASS = 9
    END = 10


TROOP_DECK = 0
TACTIC_DECK = 1
DECK_NAMES = ("troop", "tactic")
DISCARD = -1  # Redeploy's destination when the card is discarded


class Action(NamedTuple):
    """One decision. Unused fields are -1.

    ``card``: the card played from hand (or returned, or discarded by Mud);
    ``flag``: the flag played to, claimed, or where a targeted card stands;
    ``target``: the card a guile tactic moves or discards;
    ``to_flag``: where Redeploy or Traitor put it (DISCARD for Redeploy's discard);
    ``deck``: TROOP_DECK or TACTIC_DECK for draws.
    """

    kind: Kind
    card: int = -1
    flag: int = -1
    target: int = -1
    to_flag: int = -1
    deck: int = -1


def guile_action(kind: Kind, *, card: int, flag: int, target: int, to_flag: int = -1) -> Action:
    """``Action(kind, card=card, flag=flag, target=target, to_flag=to_flag)`` for the
    guile tactics, which list up to hundreds of actions each: built as a tuple in
    Action's field order, since compiled (mypyc) NamedTuple's keyword constructor made
    legal_actions take 1.75x as long on positions with a guile tactic in hand."""
    return tuple.__new__(Action, (kind, card, flag, target, to_flag, -1))


_KIND_GUILE = {
    Kind.REDEPLOY: Tactic.REDEPLOY,
    Kind.DESERTER: Tactic.DESERTER,
    Kind.TRAITOR: Tactic.TRAITOR,
}
_WORDS = {
    Kind.CLAIM: "claim",
    Kind.DRAW: "draw",
    Kind.SCOUT_DRAW: "scout-draw",
    Kind.SCOUT_RETURN: "scout-return",
    Kind.MUD_DISCARD: "mud-discard",
    Kind.PASS: "pass",
    Kind.END: "end",
    Kind.PLAY: "play",
    Kind.REDEPLOY: "redeploy",
    Kind.DESERTER: "deserter",
    Kind.TRAITOR: "traitor",
}
_KINDS = {word: kind for kind, word in _WORDS.items()}


def _at(card: int, flag: int) -> str:
    return f"{card_name(card)}@{flag + 1}"


def format_action(action: Action) -> str:
    """The text notation of an action (see the module docstring)."""
    kind, word = action.kind, _WORDS[action.kind]
    if kind is Kind.PLAY:
        if action.flag < 0:
            return f"play {card_name(action.card)}"
        return f"play {_at(action.card, action.flag)}"
    if kind is Kind.REDEPLOY:
        dest = "discard" if action.to_flag == DISCARD else str(action.to_flag + 1)
        return f"redeploy {_at(action.target, action.flag)} {dest}"
    if kind is Kind.DESERTER:
        return f"deserter {_at(action.target, action.flag)}"
    if kind is Kind.TRAITOR:
        return f"traitor {_at(action.target, action.flag)} {action.to_flag + 1}"
    if kind is Kind.CLAIM:
        return f"claim {action.flag + 1}"
    if kind in (Kind.DRAW, Kind.SCOUT_DRAW):
        return f"{word} {DECK_NAMES[action.deck]}"
    if kind is Kind.SCOUT_RETURN:
        return f"scout-return {card_name(action.card)}"
    if kind is Kind.MUD_DISCARD:
        return f"mud-discard {_at(action.card, action.flag)}"
    return word


def _parse_flag(text: str) -> int:
    if not (text.isascii() and text.isdigit()) or int(text) < 1:  # no Arabic-Indic 1
        raise ValueError(f"bad flag number {shown(text)}: flags are numbered from 1")
    return int(text) - 1


def _parse_at(text: str) -> tuple[int, int]:
    card, sep, flag = text.partition("@")
    if not sep:
        raise ValueError(f"expected CARD@FLAG, got {shown(text)}")
    return parse_card(card), _parse_flag(flag)


def _parse_deck(text: str) -> int:
    if text.lower() not in DECK_NAMES:
        raise ValueError(f"bad deck {shown(text)}: use 'troop' or 'tactic'")
    return DECK_NAMES.index(text.lower())


def parse_action(text: str) -> Action:
    """Parse the text notation; raises ValueError with a precise message."""
    words = text.split()
    if not words or words[0].lower() not in _KINDS:
        raise ValueError(f"unknown action {shown(text)}: expected one of {', '.join(_KINDS)}")
    kind, args = _KINDS[words[0].lower()], words[1:]
    expected = {
        Kind.PASS: 0,
        Kind.END: 0,
        Kind.DESERTER: 1,
        Kind.CLAIM: 1,
        Kind.DRAW: 1,
        Kind.SCOUT_DRAW: 1,
        Kind.SCOUT_RETURN: 1,
        Kind.MUD_DISCARD: 1,
        Kind.PLAY: 1,
        Kind.REDEPLOY: 2,
        Kind.TRAITOR: 2,
    }[kind]
    if len(args) != expected:
        raise ValueError(f"{shown(words[0])} takes {expected} argument(s), got {len(args)}")
    if kind is Kind.PLAY:
        if "@" in args[0]:
            card, flag = _parse_at(args[0])
            return Action(kind, card=card, flag=flag)
        return Action(kind, card=parse_card(args[0]))
    if kind in (Kind.REDEPLOY, Kind.DESERTER, Kind.TRAITOR):
        target, flag = _parse_at(args[0])
        to_flag = -1
        if kind is Kind.REDEPLOY:
            to_flag = DISCARD if args[1].lower() == "discard" else _parse_flag(args[1])
        elif kind is Kind.TRAITOR:
            to_flag = _parse_flag(args[1])
        return Action(kind, card=_KIND_GUILE[kind], flag=flag, target=target, to_flag=to_flag)
    if kind is Kind.CLAIM:
        return Action(kind, flag=_parse_flag(args[0]))
    if kind in (Kind.DRAW, Kind.SCOUT_DRAW):
        return Action(kind, deck=_parse_deck(args[0]))
    if kind is Kind.SCOUT_RETURN:
        return Action(kind, card=parse_card(args[0]))
    if kind is Kind.MUD_DISCARD:
        card, flag = _parse_at(args[0])
        return Action(kind, card=card, flag=flag)
    return Action(kind)


# The fields each kind uses; every other field must be -1.
_FIELDS: dict[Kind, tuple[str, ...]] = {
    Kind.PLAY: ("card", "flag"),
    Kind.REDEPLOY: ("card", "flag", "target", "to_flag"),
    Kind.DESERTER: ("card", "flag", "target"),
    Kind.TRAITOR: ("card", "flag", "target", "to_flag"),
    Kind.CLAIM: ("flag",),
    Kind.DRAW: ("deck",),
    Kind.SCOUT_DRAW: ("deck",),
    Kind.SCOUT_RETURN: ("card",),
    Kind.MUD_DISCARD: ("card", "flag"),
    Kind.PASS: (),
    Kind.END: (),
}


def malformation(action: Action, flags: int) -> str | None:
    """What makes an action unreadable for a board of ``flags`` flags (None: nothing).

    Actions parsed from text are always well formed; this guards actions
    built field by field, so that every rejection is a precise RuleError.
    """
    if not isinstance(action.kind, Kind):
        return f"unknown action kind {action.kind!r}"
    used = _FIELDS[action.kind]
    for name in ("card", "flag", "target", "to_flag", "deck"):
        value = getattr(action, name)
        if not isinstance(value, int):
            return f"{name} must be a number"
        if name not in used:
            if value != -1:
                return f"'{_WORDS[action.kind]}' takes no {name}"
        elif name in ("card", "target") and not 0 <= value < CARD_COUNT:
            return f"{name} {value} is no card"
        elif name == "deck" and value not in (TROOP_DECK, TACTIC_DECK):
            return "deck must be troop or tactic"
        elif name in ("flag", "to_flag") and not 0 <= value < flags:
            optional = (name == "to_flag" and action.kind is Kind.REDEPLOY) or (
                name == "flag" and action.kind is Kind.PLAY
            )
            if not (optional and value == -1):
                return f"{name} must be a flag from 1 to {flags}"
    return None
