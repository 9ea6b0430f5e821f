"""Build test positions in the rules core's own notation.

Tests name only the cards that matter; every other card of the ruleset goes
to its deck, so each position still holds every card exactly once.
"""

from __future__ import annotations

from battleline_rules import RULESETS, GameState, card_name, load_position, parse_card

_HEADER = """battleline-position: 1
ruleset: {ruleset} {options}
viewer: full
seed: 1
status: playing
turn: player={player} phase={phase} ply=0 seq={seq} idle=0 progress=0 may-draw=1 scout=0/0
mud-pending: -
"""


def position(
    ruleset: str = "standard",
    *,
    flags: dict[int, str] | None = None,
    hands: tuple[str, str] = ("", ""),
    discards: tuple[str, str] = ("", ""),
    player: int = 0,
    phase: str = "play",
    options: str = "claim=after-play first=0",
    troop_deck: str | None = None,
    tactic_deck: str | None = None,
) -> GameState:
    """A position from short strings.

    ``flags`` maps a flag number (from 1) to ``"side 0 | side 1 | env | claimed"``
    with cards written ``R7`` (placed in the order written, placement numbers
    given automatically across the board in flag order) or ``R7#5``.
    """
    rules = RULESETS[ruleset]
    seq = 0
    used: list[str] = []
    lines = []
    for number in range(1, rules.flags + 1):
        text = (flags or {}).get(number, "- | - | - | -")
        parts = [p.strip() for p in text.split("|")] + ["-"] * 4
        sides = []
        for side in parts[:2]:
            words = []
            for word in side.split():
                if word == "-":
                    continue
                if "#" not in word:
                    seq += 1
                    word = f"{word}#{seq}"
                used.append(word.split("#")[0])
                words.append(word)
            sides.append(" ".join(words) or "-")
        env = parts[2] or "-"
        used += [w.split("/")[0] for w in env.split() if w != "-"]
        lines.append(f"flag {number}: {sides[0]} | {sides[1]} | {env} | {parts[3] or '-'}")
    for text in (*hands, *discards):
        used += text.split()
    if troop_deck is not None:
        used += troop_deck.split()
    if tactic_deck is not None:
        used += tactic_deck.split()
    taken = {parse_card(w) for w in used}
    assert len(taken) == len(used), f"a card appears twice: {sorted(used)}"
    rest_troops = " ".join(card_name(c) for c in rules.troops if c not in taken)
    rest_tactics = " ".join(card_name(c) for c in rules.tactics if c not in taken)
    # With a deck given, the cards named nowhere are set aside face down (unseen).
    removed = " ".join(
        [rest_troops] * (troop_deck is not None) + [rest_tactics] * (tactic_deck is not None)
    )
    text = _HEADER.format(ruleset=ruleset, options=options, player=player, phase=phase, seq=seq)
    text += "\n".join(lines) + "\n"
    text += f"hand 0: {hands[0] or '-'}\nhand 1: {hands[1] or '-'}\n"
    text += f"deck troop: {troop_deck if troop_deck is not None else rest_troops or '-'}\n"
    text += f"deck tactic: {tactic_deck if tactic_deck is not None else rest_tactics or '-'}\n"
    text += f"removed: {removed.strip() or '-'}\n"
    text += f"discard 0: {discards[0] or '-'}\ndiscard 1: {discards[1] or '-'}\n"
    text += "returned 0: -\nreturned 1: -\n"
    return load_position(text)

