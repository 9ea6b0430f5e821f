"""Terminal rendering of a match with rich: the board, hand, what can be done, proofs, clocks.

Pure functions from protos to rich renderables (plus `parse_choice`, `card_moves` and
`choice_step` for what the player types), so `battleline play` and `battleline watch` draw
the same board and tests can render without a terminal. The board is drawn as the table
looks: nine flag columns, the opponent's cards above (the first played nearest the flag),
the viewer's below, Fog and Mud at their flag, won flags marked with an arrow toward the
winner. Every card keeps its letter (R7, HQ) or its name (FOG, TRAITOR) next to its colour,
so nothing depends on telling colours apart.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from google.protobuf.message import Message
from rich import box
from rich.columns import Columns
from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from battleline.v1 import types_pb2
from battleline_rules import (
    GameState,
    Voice,
    card_name,
    decide_claim,
    load_position,
    parse_card,
)
from battleline_rules.board import UNCLAIMED
from battleline_rules.cards import is_tactic

from .look_alike import reads_as_hosted_ai
from .printable import BLANK_LETTERS, MULTILINE_FIELDS, plain, rewrite_strings

TROOP_STYLES = {"R": "bold red", "O": "bold dark_orange", "Y": "bold yellow",
                "G": "bold green", "B": "bold blue", "P": "bold magenta"}
TROOP_COLOURS = {"R": "red", "O": "orange", "Y": "yellow", "G": "green", "B": "blue",
                 "P": "purple"}
SUIT_NAMES = {"S": "spades", "H": "hearts", "D": "diamonds", "C": "clubs"}
SUIT_STYLES = {"S": "bold white", "H": "bold red", "D": "bold dark_orange", "C": "bold green"}
TACTIC_STYLE = "bold black on grey70"
HIDDEN_STYLE = "dim"
SEAT_NAMES: dict[int, str] = {types_pb2.SEAT_FIRST: "first", types_pb2.SEAT_SECOND: "second"}
END_REASONS = {
    types_pb2.END_REASON_BREAKTHROUGH: "breakthrough (three adjacent flags)",
    types_pb2.END_REASON_ENVELOPMENT: "envelopment (enough flags)",
    types_pb2.END_REASON_FLANKS: "the flanks",
    types_pb2.END_REASON_RESIGNATION: "resignation",
    types_pb2.END_REASON_TIMEOUT: "time out",
    types_pb2.END_REASON_DRAW: "a draw",
    types_pb2.END_REASON_STALEMATE: "stalemate (provable flags awarded)",
    types_pb2.END_REASON_CANCELLED: "cancellation before the first game",
}
STEPS = {
    types_pb2.TURN_STEP_PLAY: "play a card",
    types_pb2.TURN_STEP_FINISH: "claim, then draw",
    types_pb2.TURN_STEP_SCOUT_DRAW: "Scout: draw",
    types_pb2.TURN_STEP_SCOUT_RETURN: "Scout: put a card back",
    types_pb2.TURN_STEP_MUD_DISCARD: "Mud: discard one card",
}


def card(text: str, ruleset: str = "standard") -> Text:
    """One card in its colour, its letter kept."""
    if text.startswith("?"):
        return Text(text, style=HIDDEN_STYLE)
    if ruleset == "deck52":  # no tactics: every card is a suit and a rank (HQ, S10)
        return Text(text, style=SUIT_STYLES.get(text[:1], "bold"))
    if text[:1] in TROOP_STYLES and text[1:].isdigit():
        return Text(text, style=TROOP_STYLES[text[0]])
    return Text(text, style=TACTIC_STYLE)


def cards(texts: Sequence[str], ruleset: str = "standard", sep: str = " ") -> Text:
    """Several cards on one line (or stacked with sep="\\n")."""
    out = Text()
    for i, text in enumerate(texts):
        if i:
            out.append(sep)
        out.append_text(card(text, ruleset))
    return out


def seat_label(view: types_pb2.MatchView, seat: int) -> str:
    """"you" for the viewer's own seat only; another seat's display name, with its seat
    where the name itself says "you" (or it would pass for the viewer) or reads as the
    hosted AI's on a seat the view does not mark as the AI's, or its seat."""
    if seat == view.viewer:
        return "you"
    where = f"{SEAT_NAMES.get(seat, '?')} seat"
    for player in view.players:
        if player.seat == seat and (name := shown(player.display_name)):
            passes = could_pass_for_you(name) or (
                not player.hosted_ai and reads_as_hosted_ai(name))
            return f"{name} (the {where})" if passes else name
    return where


def could_pass_for_you(name: str) -> bool:
    """Whether a display name may read as "you" or "your": its letters are those once
    full-width forms, accents, spacing, letters drawn blank and case are undone (a zero
    read as an o), or they are as few and not plain ASCII (Cyrillic lookalikes of o and u
    draw the same letters, and no table of lookalikes is complete; the web page keeps
    one, names.ts)."""
    letters = "".join(ch for ch in unicodedata.normalize("NFKD", name)
                      if ch.isalnum() and ch not in BLANK_LETTERS)
    letters = letters.casefold().replace("0", "o")
    return letters in ("you", "your") or (len(letters) <= 4 and not letters.isascii())


def _bottom_seat(view: types_pb2.MatchView) -> int:
    return view.viewer if view.viewer != types_pb2.SEAT_UNSPECIFIED else types_pb2.SEAT_FIRST


def _side(flag: types_pb2.Flag, seat: int) -> list[str]:
    return list(flag.first_cards if seat == types_pb2.SEAT_FIRST else flag.second_cards)


def _other(seat: int) -> int:
    return types_pb2.SEAT_SECOND if seat == types_pb2.SEAT_FIRST else types_pb2.SEAT_FIRST


def board(view: types_pb2.MatchView) -> Table:
    """The nine flags as columns: the opponent's cards above (the first played nearest the
    flag), the flag with its Fog or Mud in the middle, the viewer's cards below."""
    rules = view.options.ruleset
    me = _bottom_seat(view)
    them = _other(me)
    table = Table(show_header=False, box=box.ROUNDED, show_lines=True, padding=(0, 1),
                  expand=False)
    for _ in view.flags:
        table.add_column(justify="center", min_width=3)
    above = max((len(_side(f, them)) for f in view.flags), default=0)

    def theirs(flag: types_pb2.Flag) -> Text:  # bottom-aligned: the first card by the flag
        held = _side(flag, them)
        pad = Text("\n" * (above - len(held) if held else max(0, above - 1)))
        return pad.append_text(cards(held[::-1], rules, "\n"))

    table.add_row(*[theirs(f) for f in view.flags])
    markers = []
    for flag in view.flags:
        mark = Text(f"[{flag.number}]", style="bold white on dark_green")
        if flag.claimed_by != types_pb2.SEAT_UNSPECIFIED:
            arrow = "▼" if flag.claimed_by == me else "▲"
            mark = Text(f"{arrow}{flag.number}{arrow}", style="bold black on gold1")
        if flag.environment:
            mark.append("\n")
            mark.append_text(cards(list(flag.environment), rules, "\n"))
        markers.append(mark)
    table.add_row(*markers)
    table.add_row(*[cards(_side(f, me), rules, "\n") for f in view.flags])
    return table


def legend(view: types_pb2.MatchView) -> Text:
    """What the flag marks and the card letters mean."""
    me = _bottom_seat(view)
    line = Text("[n] open flag   ▼n▼ won by ", style="dim")
    line.append(f"{seat_label(view, me)}   ▲n▲ won by {seat_label(view, _other(me))}   ")
    letters = SUIT_NAMES if view.options.ruleset == "deck52" else TROOP_COLOURS
    styles = SUIT_STYLES if view.options.ruleset == "deck52" else TROOP_STYLES
    for letter, name in letters.items():
        line.append(letter, style=styles[letter])
        line.append(f" {name} ")
    return line


def _duration(value: object) -> str:
    tenths = max(0, value.ToMilliseconds() // 100)  # type: ignore[attr-defined]
    minutes, tenths = divmod(tenths, 600)
    return f"{minutes}:{tenths // 10:02d}.{tenths % 10}"


def player_line(view: types_pb2.MatchView, seat: int) -> Text:
    """One seat in a line: name, hand counts per deck, tactics played, flags, score, clock."""
    player = next((p for p in view.players if p.seat == seat), None)
    name = seat_label(view, seat)
    line = Text()
    line.append(name, style="bold green" if name == "you" else "bold cyan")
    if view.current_seat == seat and view.phase == types_pb2.MATCH_PHASE_PLAYING:
        line.append(" ●", style="bold gold1")
    if player is None:
        return line
    if not player.occupied:
        line.append(" (seat open)", style="dim")
    hand = ", ".join(f"{c.count} {c.deck}" for c in player.hand_counts) or "0"
    facts = [f"hand {hand}", f"tactics played {player.tactics_played}",
             f"flags {player.flags_claimed}"]
    if view.options.series_games > 1:
        facts.append(f"series score {player.series_score}")
    clock = next((c for c in view.clocks if c.seat == seat), None)
    if clock is not None:
        facts.append(f"clock {_duration(clock.remaining)}" + (" running" if clock.running
                                                              else ""))
    line.append("   " + " · ".join(facts))
    return line


def header(view: types_pb2.MatchView) -> Text:
    """Ruleset, game, decks and whose step it is, in one line."""
    decks = ", ".join(f"{d.deck} deck {d.count}" for d in view.decks)
    line = Text(f"{view.options.ruleset} - game {view.game_number} - {decks} - ")
    if view.phase == types_pb2.MATCH_PHASE_WAITING:
        line.append("waiting for the other seat", style="bold yellow")
    elif view.phase == types_pb2.MATCH_PHASE_FINISHED:
        line.append(result(view), style="bold")
    else:
        who = seat_label(view, view.current_seat)
        line.append(f"{who} to {STEPS.get(view.turn_step, 'act')}", style="bold cyan")
    return line


def result(view: types_pb2.MatchView) -> str:
    """Who won and how, in words."""
    reason = END_REASONS.get(view.end_reason, "the end")
    if view.end_reason == types_pb2.END_REASON_CANCELLED:
        return "match cancelled: nobody took the other seat"
    if view.winner == types_pb2.SEAT_UNSPECIFIED:
        return f"match over: no winner ({reason})"
    who = seat_label(view, view.winner)
    return f"match over: {'you win' if who == 'you' else who + ' wins'} by {reason}"


def actions(view: types_pb2.MatchView) -> RenderableType:
    """The legal actions, numbered from 1, in columns (what `list` shows)."""
    view = drawable(view)
    items = [Text.assemble((f"{i:>2}. ", "bold"), a) for i, a in enumerate(view.legal_actions, 1)]
    return Columns(items, column_first=True, padding=(0, 3))


_GUILE = {"redeploy": "REDEPLOY", "deserter": "DESERTER", "traitor": "TRAITOR"}
_ALONE = {"pass": "play no card (no troop card can be placed)",
          "end": "end the turn without drawing (your hand holds seven, or both decks are "
                 "empty)"}


def placed(text: str, ruleset: str = "standard") -> Text:
    """A card on the board as the notation writes it (R7@3), the card in its colour."""
    held, _, flag = text.partition("@")
    return card(held, ruleset).append(f"@{flag}" if flag else "")


def choices(view: types_pb2.MatchView) -> RenderableType:
    """What the seat can do now, a line a kind of move, cards grouped by the flags they
    may go to: a few lines where the numbered list of legal actions runs to sixty."""
    view = drawable(view)
    rules = view.options.ruleset
    flags: dict[str, list[str]] = {}  # hand card -> the flags it may be played at
    kinds: dict[str, list[str]] = {}  # verb -> what follows it
    for action in view.legal_actions:
        verb, _, rest = action.partition(" ")
        if verb == "play":
            held, _, flag = rest.partition("@")
            flags.setdefault(held, []).append(flag)
        else:
            kinds.setdefault(verb, []).append(rest)
    table = Table(show_header=False, box=None, padding=(0, 1), title_justify="left",
                  title=Text("you can", style="bold"))
    table.add_column(style="bold")
    table.add_column()
    by_flags: dict[tuple[str, ...], list[str]] = {}
    for name, at in flags.items():
        by_flags.setdefault(tuple(f for f in at if f), []).append(name)
    for where, names in by_flags.items():
        line = cards(names, rules)
        line.append(f" at flag {' '.join(where)}" if where else "")
        table.add_row("play", line)
    for verb, rests in kinds.items():
        if verb in _GUILE or verb == "mud-discard":  # the cards it may take (then where to)
            targets = list(dict.fromkeys(r.split()[0] for r in rests if r.strip()))
            line = Text(" ").join(placed(t, rules) for t in targets)
            if verb in ("redeploy", "traitor"):
                line.append(", then a flag" + (" or discard" if verb == "redeploy" else ""))
            table.add_row(Text(verb), line)
        elif verb == "scout-return":
            table.add_row(Text(verb), cards(rests, rules))
        else:
            table.add_row(Text(verb), Text(" ".join(rests) or _ALONE.get(verb, ""), style=(
                "" if rests[0] else "dim")))
    for name, why in held_back(view):
        table.add_row(Text("not now", style="dim"),
                      Text.assemble(card(name, rules), (f": {why}", "dim")))
    return Group(table, Text("type a card then a flag (R7 3), or a card alone and answer, or "
                             "the notation; 'list' numbers every action, '?' helps",
                             style="dim"))


def not_playable(text: str, view: types_pb2.MatchView) -> str | None:
    """Why the card named by ``text`` has no move now, said to the player; None when the
    text names no card (it may be a number or the notation)."""
    name = text.strip().upper()
    try:
        parse_card(name)
    except ValueError:
        return None
    if name not in view.hand:
        return f"{name} is not in your hand"
    reason = dict(held_back(view)).get(name)
    return f"{name}: {reason}" if reason else f"{name} has no move at this step"


def held_back(view: types_pb2.MatchView) -> list[tuple[str, str]]:
    """The tactics in hand that cannot be played now, each with the rules core's reason:
    left out of "you can" without a word, a player took them for a bug."""
    state = _position(view)
    if view.turn_step != types_pb2.TURN_STEP_PLAY or state is None:
        return []
    held = []
    for name in view.hand:
        try:
            tactic = parse_card(name)
        except ValueError:
            continue
        if not is_tactic(tactic) or card_moves(name, view.legal_actions):
            continue
        refusal = state.tactic_refusal(state.current_player, tactic)
        held.append((name, refusal.message if refusal else "nothing it could be played on now"))
    return held


def proofs(view: types_pb2.MatchView) -> RenderableType | None:
    """Claimable flags with the engine's proof in words."""
    if not view.claimable_flags:
        return None
    lines = [Text.assemble((f"flag {c.number}: ", "bold gold1"), c.proof)
             for c in view.claimable_flags]
    return Panel(Group(*lines), title="you can claim", border_style="gold1")


def _position(view: types_pb2.MatchView) -> GameState | None:
    """The view in the rules core's notation, loaded (None for a view without one)."""
    if not view.position:
        return None
    try:
        return load_position(view.position)
    except ValueError:
        return None


def _seat_of(index: int) -> int:
    """The proto Seat of a rules-core seat (0 or 1)."""
    return types_pb2.SEAT_FIRST if index == 0 else types_pb2.SEAT_SECOND


def discards(view: types_pb2.MatchView) -> Text | None:
    """Both discard piles (tactics played as Scout, Redeploy, Deserter, Traitor, and
    the cards they removed), when either holds a card."""
    state = _position(view)
    if state is None or not any(state.discards):
        return None
    rules = view.options.ruleset
    line = Text("discards: ", style="bold")
    for i in (0, 1):
        if i:
            line.append("; ")
        line.append(f"{seat_label(view, _seat_of(i))} ")
        line.append_text(cards([card_name(c) for c in state.discards[i]] or ["-"], rules))
    return line


def revealed_hands(view: types_pb2.MatchView) -> Text | None:
    """Once the game is over every card is public: the other seat's hand, shown."""
    state = _position(view)
    if state is None or not state.is_over:
        return None
    rules = view.options.ruleset
    shown = Text()
    for i in (0, 1):
        seat = _seat_of(i)
        if seat == view.viewer:
            continue
        if shown:
            shown.append("\n")
        name = seat_label(view, seat)
        shown.append(f"{name}'s hand: ", style="bold")
        shown.append_text(cards([card_name(c) for c in state.hands[i]] or ["-"], rules))
    return shown


RECENT = 4  # the moves the screen tells in words (a hot seat reads 3x as many events
# per turn by a Watch resume, charged 12/100 of a GetRecord read)


def recent_moves(events: Sequence[types_pb2.MatchEvent], view: types_pb2.MatchView) -> Text:
    """The last few moves in words, oldest first, naming who made them."""
    moves = [e for e in events if e.kind == types_pb2.EVENT_KIND_ACTION][-RECENT:]
    out = Text("last moves:", style="bold")
    for event in moves:
        who = seat_label(view, event.seat)
        out.append("\n  ")
        out.append(f"{who}: ", style="green" if who == "you" else "bold cyan")
        out.append(in_words(shown(event.text)))
    return out


# The most a table holds in any ruleset: nine flags, four cards a side of one (under Mud),
# Fog and Mud, a hand of seven and a Scout's draws, every card of the game discarded, two
# players, two decks, two cards put back by Scout; and the most legal actions a position
# has (Traitor and Redeploy with every flag full stay under 800).
MOST_FLAGS, MOST_ON_A_SIDE, MOST_AT_A_FLAG, MOST_IN_HAND, MOST_DISCARDED = 9, 4, 2, 10, 70
MOST_SEATS, MOST_DECKS, MOST_RETURNED, MOST_ACTIONS = 2, 2, 2, 1000
# The longest string of the server's drawn whole (a claim's proof in words is under 300
# characters; a card, an action, a name far shorter); the position is read, not drawn.
MOST_TEXT = 600


def clip_texts(message: Message, most: int = MOST_TEXT) -> None:
    """Cut every string field of `message` but a position to ``most`` characters (an
    ellipsis marks the cut), in place, at every depth: rich lays out a 3 MB string for
    seconds (thirteenth audit)."""
    rewrite_strings(message, lambda field, text: (
        text if field in MULTILINE_FIELDS else _clipped(text, most)))


def _clipped(text: str, most: int) -> str:
    return text if len(text) <= most else text[:most - 1] + "…"


def shown(text: str) -> str:
    """One line of the other side's text (a name, an event) as drawn: no control
    character, at most `MOST_TEXT` characters."""
    return _clipped(plain(text), MOST_TEXT)


def drawable(view: types_pb2.MatchView) -> types_pb2.MatchView:
    """A copy of `view` cut to what a table holds, its strings to `MOST_TEXT`. Drawing costs
    about 0.3 ms and 5 KB a card: a hostile server's view with 100,000 cards on one flag
    kept `battleline watch` drawing for minutes at 500 MB (twelfth audit), 3 MB of legal
    actions or of a proof for 2-31 s (thirteenth)."""
    cut = types_pb2.MatchView()
    cut.CopyFrom(view)
    del cut.flags[MOST_FLAGS:], cut.hand[MOST_IN_HAND:], cut.claimable_flags[MOST_FLAGS:]
    del cut.legal_actions[MOST_ACTIONS:], cut.scout_returned[MOST_RETURNED:]
    del cut.players[MOST_SEATS:], cut.clocks[MOST_SEATS:], cut.decks[MOST_DECKS:]
    for flag in cut.flags:
        del flag.first_cards[MOST_ON_A_SIDE:], flag.second_cards[MOST_ON_A_SIDE:]
        del flag.environment[MOST_AT_A_FLAG:]
    for player in cut.players:
        del player.discards[MOST_DISCARDED:], player.hand_counts[MOST_DECKS:]
    clip_texts(cut)
    return cut


def screen(view: types_pb2.MatchView, title: str = "",
           recent: Sequence[types_pb2.MatchEvent] = ()) -> RenderableType:
    """Everything about the match the viewer may see, for one turn: the opponent, the board,
    the viewer, the legend, discard piles, the last moves (from ``recent``), the hand."""
    view = drawable(view)
    me = _bottom_seat(view)
    parts: list[RenderableType] = [header(view), player_line(view, _other(me)), board(view),
                                   player_line(view, me), legend(view)]
    piles = discards(view)
    if piles is not None:
        parts.append(piles)
    if any(e.kind == types_pb2.EVENT_KIND_ACTION for e in recent):
        parts.append(recent_moves(recent, view))
    if view.hand:
        parts.append(Text.assemble(("your hand: ", "bold"),
                                   cards(list(view.hand), view.options.ruleset)))
    if view.scout_returned:
        parts.append(Text(f"you put back with Scout: {' '.join(view.scout_returned)}",
                          style="dim"))
    shown = proofs(view)
    if shown is not None:
        parts.append(shown)
    # The server's text as Text, never markup (a match id `[/bold]` crashed rich).
    return Panel(Group(*parts), title=Text(title or f"match {view.match_id}"),
                 border_style="blue")


# Actions whose notation says little to a newcomer, told again in words.
_WORDS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"traitor (\S+)@(\d+) (\d+)$"), r"Traitor: took \1 from flag \2 to flag \3"),
    (re.compile(r"deserter (\S+)@(\d+)$"), r"Deserter: removed \1 from flag \2 (discarded)"),
    (re.compile(r"redeploy (\S+)@(\d+) discard$"), r"Redeploy: discarded \1 from flag \2"),
    (re.compile(r"redeploy (\S+)@(\d+) (\d+)$"), r"Redeploy: moved \1 from flag \2 to flag \3"),
    (re.compile(r"play SCOUT$"), "Scout: draws three cards, then puts two back"),
    (re.compile(r"play FOG@(\d+)$"), r"Fog at flag \1: only the sum counts there"),
    (re.compile(r"play MUD@(\d+)$"), r"Mud at flag \1: four cards a side there"),
    (re.compile(r"mud-discard (\S+)@(\d+)$"), r"discarded \1 from flag \2 (Mud left)"),
    (re.compile(r"scout-return (\S+)$"), r"Scout: put \1 back on its deck"),
    (re.compile(r"pass$"), "passed (no troop card can be placed)"),
    (re.compile(r"end$"), "ended the turn without drawing"),
)


def action_words(text: str) -> str:
    """An action in words, for the notations that need them ("" when it speaks for itself)."""
    for pattern, words in _WORDS:
        if pattern.match(text):
            return pattern.sub(words, text)
    return ""


# The plain actions, which speak for themselves in a log but read better in a sentence.
_PLAIN: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"play (\S+)@(\d+)$"), r"played \1 at flag \2"),
    (re.compile(r"claim (\d+)$"), r"claimed flag \1"),
    (re.compile(r"draw (\w+) ([^?\s]\S*)$"), r"drew \2 from the \1 deck"),
    (re.compile(r"draw (\w+)( \?\S*)?$"), r"drew from the \1 deck"),
    (re.compile(r"scout-draw (\w+) ([^?\s]\S*)$"), r"Scout: drew \2 from the \1 deck"),
    (re.compile(r"scout-draw (\w+)( \?\S*)?$"), r"Scout: drew from the \1 deck"),
)


def in_words(text: str) -> str:
    """Any action as a sentence ("play R7@3" -> "played R7 at flag 3")."""
    for pattern, words in (*_WORDS, *_PLAIN):
        if pattern.match(text):
            return pattern.sub(words, text)
    return text


def claim_proof(view: types_pb2.MatchView, flag_number: int, seat: int) -> str:
    """Why ``seat``'s claim of a flag held, in words naming the seats ("" if it cannot be
    told from this view): decided again by the rules core on the view's position."""
    state = _position(view)
    index, claimant = flag_number - 1, 0 if seat == types_pb2.SEAT_FIRST else 1
    if state is None or not 0 <= index < len(state.flags):
        return ""
    flag = state.flags[index].copy()
    flag.claimed = UNCLAIMED  # decided as just before the claim
    verdict = decide_claim(state.ruleset, flag, index, claimant, state.available)
    if not verdict.granted:
        return ""
    name = seat_label(view, seat)
    other = seat_label(view, _seat_of(1 - claimant))
    voice = Voice(name, "your" if name == "you" else f"{name}'s",
                  other, "your" if other == "you" else f"{other}'s")
    return verdict.explain(voice)


def event_line(event: types_pb2.MatchEvent, view: types_pb2.MatchView | None = None) -> Text:
    """One event as a line, naming who did it; tactics in words, claims with their proof."""
    who = ""
    if event.seat != types_pb2.SEAT_UNSPECIFIED:
        who = (seat_label(view, event.seat) if view is not None
               else SEAT_NAMES.get(event.seat, "?"))
    style = "green" if who == "you" else "bold cyan" if who else "bold"
    text = shown(event.text)
    if view is not None and event.kind == types_pb2.EVENT_KIND_GAME_OVER:
        for seat, name in SEAT_NAMES.items():
            text = text.replace(f"the {name} seat", seat_label(view, seat))
    line = Text.assemble((f"#{event.number} ", "dim"), (f"{who}: " if who else "", style), text)
    words = action_words(text)
    claimed = re.match(r"claim (\d+)$", text)
    if claimed and view is not None and who != "you":
        words = claim_proof(view, int(claimed.group(1)), event.seat)
    if words:
        line.append(f"  ({words})", style="dim")
    return line


def card_moves(text: str, legal: Sequence[str]) -> list[str]:
    """The legal actions that use the hand card named by ``text`` (any case): "R7" -> its
    plays at each flag, "TRAITOR" -> every card it may take and where to, "R3" while
    Scout puts cards back -> putting it back; so a move can be chosen by card, then flag."""
    name = text.strip().upper()
    guile = next((verb for verb, card_ in _GUILE.items() if card_ == name), None)
    return [a for a in legal
            if a in (f"play {name}", f"scout-return {name}")
            or a.startswith((f"play {name}@", f"mud-discard {name}@"))
            or (guile is not None and a.startswith(f"{guile} "))]


def choice_step(moves: Sequence[str]) -> tuple[str, dict[str, list[str]]]:
    """The question that narrows several actions of one card down, and its answers (in
    upper case) with the actions each leaves: "to which flag?" {"3": ["play R7@3"], ...},
    or for Deserter, Redeploy, Traitor first "which card?" {"B4@2": [...], ...}."""
    # A broken server's duplicates (spacing apart) once.
    moves = list(dict.fromkeys(" ".join(move.split()) for move in moves))
    words = [move.split() for move in moves]
    at = next((i for i in range(1, min(map(len, words)))
               if len({w[i] for w in words}) > 1), 0)
    parts = [w[at] for w in words]
    cards_here = {part.partition("@")[0] for part in parts}
    answers: dict[str, list[str]] = {}
    if "@" in parts[0] and len(cards_here) > 1:
        question = "which card?"
        keys = parts
    else:
        question = "to which flag?"
        keys = [part.rpartition("@")[2] for part in parts]
    for key, move in zip(keys, moves, strict=True):
        answers.setdefault(key.upper(), []).append(move)
    if len(answers) == 1 and len(moves) > 1:  # no word tells them apart: ask by number
        return "which one?", {str(i): [move] for i, move in enumerate(moves, 1)}
    return question, answers


_CARD_AND_FLAG = re.compile(r"(\S+)\s+(\d+)$")


def parse_choice(text: str, legal: Sequence[str]) -> list[str] | None:
    """What the player typed: a number from the list, or actions separated by commas, each
    in the notation ("play R7@3, draw troop") or short ("R7 3, troop"); None for an empty
    line or a number out of range. Notation is passed on as typed: the engine is the
    judge."""
    text = text.strip()
    if not text:
        return None
    if text.isdigit():
        n = int(text)
        return [legal[n - 1]] if 1 <= n <= len(legal) else None
    return [_written_out(part.strip()) for part in text.replace(";", ",").split(",")
            if part.strip()]


def _written_out(part: str) -> str:
    """One action in the notation: a card and a flag ("R7 3") is its play, a deck alone
    ("troop", as the "you can" line shows it after `draw`) is its draw."""
    short = _CARD_AND_FLAG.match(part)
    if short and short.group(1).lower() not in ("claim", "redeploy", "traitor"):
        return f"play {short.group(1).upper()}@{short.group(2)}"
    if part.lower() in ("troop", "tactic"):
        return f"draw {part.lower()}"
    return part
