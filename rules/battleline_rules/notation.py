"""Position notation: a full state or a view as text, round-tripping exactly.

One ``key: value`` line per field; flags are numbered from 1, seats are 0 and
1, decks list cards from bottom to top, and ``CARD#N`` is a card placed N-th
in the game (ties go to the side completed first). Example:

    battleline-position: 1
    ruleset: standard claim=after-play first=0
    viewer: full
    seed: 42
    status: playing
    turn: player=1 phase=play ply=3 seq=3 idle=0 progress=0 may-draw=1 scout=0/0
    mud-pending: -
    flag 1: R7#1 R8#3 | B2#2 | FOG/1 | -
    hand 0: R1 B3 ALEXANDER
    hand 1: ?troop*6 ?tactic
    deck troop: ?troop*40
    ...

Counters that follow from the cards (tactics played, Leader used, which
cards are public) are derived on load rather than written.
"""

from __future__ import annotations

from collections import Counter

from .board import UNCLAIMED, Flag
from .cards import (
    CARD_COUNT,
    ENVIRONMENT,
    LEADERS,
    UNKNOWN_TACTIC,
    UNKNOWN_TROOP,
    card_name,
    is_tactic,
    parse_card,
)
from .rulesets import RULESETS, Options
from .state import SPECTATOR, GameState, Phase

VERSION = "1"
_PLACEHOLDERS = (UNKNOWN_TROOP, UNKNOWN_TACTIC)


# Card id -> name, placeholders included (dump_position names every card of a state).
_NAMES: dict[int, str] = {c: card_name(c) for c in (*_PLACEHOLDERS, *range(CARD_COUNT))}


def _cards(cards: list[int]) -> str:
    if not cards:
        return "-"
    names = _NAMES
    if UNKNOWN_TROOP not in cards and UNKNOWN_TACTIC not in cards:
        return " ".join([names[c] for c in cards])
    words: list[str] = []
    i = 0
    while i < len(cards):
        card, run = cards[i], 1
        if card in _PLACEHOLDERS:
            while i + run < len(cards) and cards[i + run] == card:
                run += 1
        words.append(names[card] + (f"*{run}" if run > 1 else ""))
        i += run
    return " ".join(words)


def flag_text(flag: Flag) -> str:
    """A flag's part of a position line, kept on the flag until it changes (states share
    unchanged flags, so a turn's position re-formats only what the turn changed). It
    names everything on the flag, so it also serves as the flag's key in others' caches."""
    if flag.text is not None:
        return flag.text
    names = _NAMES
    cards, seqs = flag.cards, flag.seqs
    first, second = (
        " ".join([f"{names[c]}#{n}" for c, n in zip(cards[s], seqs[s], strict=True)]) or "-"
        for s in (0, 1)
    )
    env = " ".join([f"{names[c]}/{owner}" for c, owner in flag.env]) or "-"
    claimed = "-" if flag.claimed == UNCLAIMED else str(flag.claimed)
    flag.text = f"{first} | {second} | {env} | {claimed}"
    return flag.text


# `CARD*N` stands for N cards; no game has more than 70 (standard's troops and tactics),
# and a few bytes asking for millions must not make them.
MAX_REPEAT = 70


def _parse_cards(text: str) -> list[int]:
    cards: list[int] = []
    for word in text.split():
        if word == "-":
            continue
        name, _, count = word.partition("*")
        if count and not (count.isascii() and count.isdigit() and int(count) <= MAX_REPEAT):
            raise ValueError(f"bad count in {word[:24]!r}: a card repeats 1 to {MAX_REPEAT} times")
        cards.extend([parse_card(name)] * (int(count) if count else 1))
    return cards


def _seat(text: str) -> int:
    if text not in ("0", "1"):
        raise ValueError(f"bad seat {text!r}: seats are 0 and 1")
    return int(text)


def dump_position(state: GameState) -> str:
    """The notation of a state or view (see the module docstring)."""
    viewer = {None: "full", SPECTATOR: "spectator"}.get(state.viewer, str(state.viewer))
    if state.is_over:
        status = "draw" if state.winner is None else f"won {state.winner}"
    else:
        status = "playing"
    lines = [
        f"battleline-position: {VERSION}",
        f"ruleset: {state.ruleset.name} {state.options.text()}",
        f"viewer: {viewer}",
        f"seed: {'-' if state.seed is None else state.seed}",
        f"status: {status}",
        f"turn: player={state.player} phase={state.phase.name.lower()} ply={state.ply} "
        f"seq={state.seq} idle={state.idle_turns} progress={int(state.progress)} "
        f"may-draw={int(state.may_draw)} scout={state.scout_draws}/{state.scout_returns}",
        "mud-pending: " + (" ".join(f"{s}@{f + 1}" for s, f in state.mud_pending) or "-"),
    ]
    for i, flag in enumerate(state.flags, 1):
        lines.append(f"flag {i}: {flag_text(flag)}")
    for seat in (0, 1):
        lines.append(f"hand {seat}: {_cards(state.hands[seat])}")
    lines.append(f"deck troop: {_cards(state.decks[0])}")
    lines.append(f"deck tactic: {_cards(state.decks[1])}")
    lines.append(f"removed: {_cards(state.removed)}")
    for seat in (0, 1):
        lines.append(f"discard {seat}: {_cards(state.discards[seat])}")
    for seat in (0, 1):
        lines.append(f"returned {seat}: {_cards(state.returned[seat])}")
    return "\n".join(lines) + "\n"


def load_position(text: str) -> GameState:
    """Parse the notation; raises ValueError naming the line at fault."""
    fields: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("  #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition(":")
        if not sep:
            raise ValueError(f"line {number}: expected 'key: value', got {raw!r}")
        fields[key.strip()] = value.strip()
    try:
        state = _build(fields)
    except KeyError as missing:
        raise ValueError(f"position lacks the line {missing.args[0]!r}") from None
    _check_consistent(state)
    return state


def _build(fields: dict[str, str]) -> GameState:
    if fields["battleline-position"] != VERSION:
        raise ValueError(f"unsupported position version {fields['battleline-position']!r}")
    name, *option_words = fields["ruleset"].split()
    if name not in RULESETS:
        raise ValueError(f"unknown ruleset {name!r}: use one of {', '.join(RULESETS)}")
    state = GameState(RULESETS[name], Options.parse(option_words), None)
    viewer = fields["viewer"]
    state.viewer = {"full": None, "spectator": SPECTATOR}.get(viewer)
    if viewer not in ("full", "spectator"):
        state.viewer = _seat(viewer)
    state.seed = None if fields["seed"] == "-" else int(fields["seed"])
    turn = dict(word.split("=", 1) for word in fields["turn"].split())
    state.player = _seat(turn["player"])
    if turn["phase"].upper() not in Phase.__members__:
        phases = ", ".join(p.lower() for p in Phase.__members__)
        raise ValueError(f"unknown phase {turn['phase']!r}: use one of {phases}")
    state.phase = Phase[turn["phase"].upper()]
    state.ply, state.seq = int(turn["ply"]), int(turn["seq"])
    state.idle_turns, state.progress = int(turn["idle"]), turn["progress"] == "1"
    state.may_draw = turn["may-draw"] == "1"
    draws, returns = turn["scout"].split("/")
    state.scout_draws, state.scout_returns = int(draws), int(returns)
    status = fields["status"].split()
    if status[:1] == ["won"] and len(status) == 2:
        state.winner = _seat(status[1])
    elif status not in (["playing"], ["draw"]):
        raise ValueError(f"bad status {fields['status']!r}: playing, draw, or won and a seat")
    if fields["mud-pending"] != "-":
        for item in fields["mud-pending"].split():
            seat, _, flag = item.partition("@")
            state.mud_pending.append((_seat(seat), int(flag) - 1))
    for i in range(state.ruleset.flags):
        state.flags[i] = _flag(fields[f"flag {i + 1}"], i)
    state.hands = [_parse_cards(fields[f"hand {s}"]) for s in (0, 1)]
    state.decks = [_parse_cards(fields["deck troop"]), _parse_cards(fields["deck tactic"])]
    state.removed = _parse_cards(fields["removed"])
    state.discards = [_parse_cards(fields[f"discard {s}"]) for s in (0, 1)]
    state.returned = [_parse_cards(fields[f"returned {s}"]) for s in (0, 1)]
    _derive_counters(state)
    return state


def _flag(text: str, index: int) -> Flag:
    parts = [p.strip() for p in text.split("|")]
    if len(parts) != 4:
        raise ValueError(f"flag {index + 1}: expected 'side 0 | side 1 | env | claimed'")
    flag = Flag()
    for seat in (0, 1):
        for word in parts[seat].split():
            if word == "-":
                continue
            name, sep, seq = word.partition("#")
            if not sep:
                raise ValueError(f"flag {index + 1}: {word!r} lacks its placement number (#N)")
            flag.place(seat, parse_card(name), int(seq))
    env = [word for word in parts[2].split() if word != "-"]
    if len(env) > len(ENVIRONMENT):  # checked first: each card added rescans the flag's list
        raise ValueError(f"flag {index + 1}: at most {len(ENVIRONMENT)} environment cards")
    for word in env:
        name, _, owner = word.partition("/")
        flag.add_env(parse_card(name), _seat(owner))
    flag.claimed = UNCLAIMED if parts[3] == "-" else _seat(parts[3])
    return flag


def _derive_counters(state: GameState) -> None:
    """Tactics played, Leaders used and the public mask follow from where cards are."""
    played: list[list[int]] = [[], []]
    public = 0
    for flag in state.flags:
        for seat in (0, 1):
            played[seat] += [c for c in flag.cards[seat] if is_tactic(c)]
            for card in flag.cards[seat]:
                public |= 1 << card
        for card, owner in flag.env:
            played[owner].append(card)
            public |= 1 << card
    for seat in (0, 1):
        played[seat] += [c for c in state.discards[seat] if is_tactic(c)]
        for card in state.discards[seat]:
            public |= 1 << card
    state.tactics_played = [len(played[0]), len(played[1])]
    state.leader_used = [any(c in LEADERS for c in played[s]) for s in (0, 1)]
    state.public = public


def _check_consistent(state: GameState) -> None:
    """Refuse positions the rules could not reach: a card twice, a card lost, a bad step.

    A full state holds every card of its ruleset exactly once; a view holds
    each card it shows once and one placeholder for every card it hides.
    """
    places: list[int] = []
    for cards in (*state.hands, *state.decks, state.removed, *state.discards):
        places += cards
    for flag in state.flags:
        places += flag.cards[0] + flag.cards[1] + [c for c, _ in flag.env]
        if max(len(flag.cards[0]), len(flag.cards[1])) > flag.size and not state.mud_pending:
            raise ValueError("a side holds more cards than its flag allows")
    shown = [c for c in places if c >= 0]
    twice = [c for c, count in Counter(shown).items() if count > 1]
    if twice:
        raise ValueError(f"cards in two places: {' '.join(card_name(c) for c in sorted(twice))}")
    rules, shown_set = state.ruleset, set(shown)
    for pool, placeholder, kind in (
        (rules.troops, UNKNOWN_TROOP, "troop"),
        (rules.tactics, UNKNOWN_TACTIC, "tactic"),
    ):
        hidden = places.count(placeholder)
        unseen = [c for c in pool if c not in shown_set]
        if state.viewer is None and hidden:
            raise ValueError("a full state (viewer: full) cannot hide cards")
        if hidden != len(unseen):
            missing = " ".join(card_name(c) for c in unseen[:5])
            raise ValueError(
                f"{len(unseen)} {kind} cards are unaccounted for ({missing}...) "
                f"but {hidden} are hidden"
            )
    foreign = [c for c in shown if c not in rules.troops and c not in rules.tactics]
    if foreign:
        raise ValueError(f"{card_name(foreign[0])} is not a card of {rules.name}")
    steps = {
        Phase.MUD_DISCARD: bool(state.mud_pending),
        Phase.SCOUT_DRAW: state.scout_draws > 0,
        Phase.SCOUT_RETURN: state.scout_returns > 0,
        Phase.OVER: True,
    }
    if not steps.get(state.phase, not state.mud_pending):
        raise ValueError(
            f"phase {state.phase.name.lower()} does not match its counters "
            "(mud-pending, scout=draws/returns)"
        )
