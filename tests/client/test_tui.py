"""The terminal board: drawn as the table looks (nine flag columns, the opponent's cards
above, the viewer's below), every card keeps its letter (colour-blind safe), claim proofs,
clocks, discards and the last moves in words are shown, what can be done fits in a few
lines, and typed choices are read as a card then a flag, numbers or notation."""

from __future__ import annotations

import itertools
import random
import re

from rich.console import Console

from battleline.v1 import types_pb2, watch_pb2
from battleline_client import tui
from battleline_client.bots import choose
from battleline_client.client import Client
from battleline_client.common import WatchCursor, is_finished, is_my_turn
from battleline_rules import parse_card
from battleline_rules.cards import is_tactic
from tests.local_match import turns
from tests.rules.positions import position


def _text(renderable: object) -> str:
    console = Console(width=160, record=True, force_terminal=True)
    console.print(renderable)
    return console.export_text()


def test_board_shows_every_card_hand_counts_proofs_and_clocks(client: Client) -> None:
    created = client.create(opponent="local", clock="per-move", clock_seconds=600)
    assert created.other is not None
    seats = [client.seat(created.seat), client.seat(created.other)]
    rng = random.Random(21)
    proof_seen = False
    for _ in range(400):
        views = [seat.view() for seat in seats]
        if is_finished(views[0]):
            break
        mover = 0 if is_my_turn(views[0]) else 1
        view = views[mover]
        shown = _text(tui.screen(view))
        for flag in view.flags:
            for card in [*flag.first_cards, *flag.second_cards, *flag.environment]:
                assert card in shown
        for card in view.hand:
            assert card in shown
        opponent = view.players[1 - mover]
        counts = ", ".join(f"{c.count} {c.deck}" for c in opponent.hand_counts)
        assert counts in shown and "running" in shown
        for claim in view.claimable_flags:
            proof_seen = True
            assert f"flag {claim.number}:" in shown and claim.proof[:40] in shown.replace(
                "\n", " ")
            # Shown beside its flag, a proof does not name the flag again (issue #15).
            assert not claim.proof.startswith("flag "), claim.proof
        claims = [a for a in view.legal_actions if a.startswith("claim ")]
        seats[mover].act(*(claims[:1] or choose(view, rng)))
    assert proof_seen
    final = client.view(created.match_id)
    assert "match over:" in _text(tui.screen(final)) or final.phase != 3
    assert tui.result(final).startswith("match over")


def test_cards_are_coloured_and_keep_their_letters() -> None:
    assert tui.card("R7").style == "bold red" and tui.card("R7").plain == "R7"
    assert tui.card("HQ", "deck52").style == "bold red"
    assert tui.card("FOG").style == tui.TACTIC_STYLE
    assert tui.card("?troop").style == tui.HIDDEN_STYLE


def test_parse_choice_reads_numbers_and_notation() -> None:
    legal = ["play R7@3", "play R7@4"]
    assert tui.parse_choice("2", legal) == ["play R7@4"]
    assert tui.parse_choice("3", legal) is None and tui.parse_choice("  ", legal) is None
    assert tui.parse_choice("play R7@3, draw troop", legal) == ["play R7@3", "draw troop"]
    assert tui.parse_choice("claim 4; draw tactic", legal) == ["claim 4", "draw tactic"]
    # Short forms in a list too, and a deck alone as the "you can" line shows it after
    # `draw` (a newcomer's walkthrough: both were refused as malformed).
    assert tui.parse_choice("R7 3, troop", legal) == ["play R7@3", "draw troop"]
    assert tui.parse_choice("Tactic", legal) == ["draw tactic"]


def test_a_card_then_a_flag_is_a_move() -> None:
    """Numbers change every turn; a card and a flag stay what they are (issue #15)."""
    legal = ["play R7@3", "play R7@4", "play SCOUT", "play FOG@2", "pass"]
    assert tui.card_moves("r7", legal) == ["play R7@3", "play R7@4"]
    assert tui.card_moves("SCOUT", legal) == ["play SCOUT"]
    assert tui.card_moves("B9", legal) == [] and tui.card_moves("pass", legal) == []
    assert tui.parse_choice("R7 4", legal) == ["play R7@4"]
    assert tui.parse_choice("fog 2", legal) == ["play FOG@2"]
    assert tui.parse_choice("R7 9", legal) == ["play R7@9"]  # the engine says why not
    assert tui.choice_step(tui.card_moves("R7", legal)) == (
        "to which flag?", {"3": ["play R7@3"], "4": ["play R7@4"]})


def test_a_guile_tactic_asks_for_the_card_then_the_flag() -> None:
    legal = ["play R7@3", "traitor B4@2 3", "traitor B4@2 6", "traitor Y8@5 6",
             "deserter B4@2", "deserter Y8@5", "redeploy R7@1 discard", "redeploy R7@1 4"]
    traitor = tui.card_moves("traitor", legal)
    assert traitor == ["traitor B4@2 3", "traitor B4@2 6", "traitor Y8@5 6"]
    question, answers = tui.choice_step(traitor)
    assert question == "which card?" and list(answers) == ["B4@2", "Y8@5"]
    assert tui.choice_step(answers["B4@2"]) == (
        "to which flag?", {"3": ["traitor B4@2 3"], "6": ["traitor B4@2 6"]})
    assert answers["Y8@5"] == ["traitor Y8@5 6"]  # one use left: no more questions
    assert tui.choice_step(tui.card_moves("Deserter", legal))[1] == {
        "B4@2": ["deserter B4@2"], "Y8@5": ["deserter Y8@5"]}
    assert tui.choice_step(tui.card_moves("REDEPLOY", legal)) == (
        "to which flag?", {"DISCARD": ["redeploy R7@1 discard"], "4": ["redeploy R7@1 4"]})
    assert tui.card_moves("R3", ["scout-return R3", "scout-return B4"]) == ["scout-return R3"]
    assert tui.card_moves("r4", ["mud-discard R4@6", "mud-discard B1@6"]) == [
        "mud-discard R4@6"]


def test_what_can_be_done_fits_in_a_few_lines(client: Client) -> None:
    """The opening turn offers some sixty actions; the terminal tells them in a line a kind
    of move, every card and flag still named (issue #15)."""
    created = client.create(opponent="local", clock="none", seed=4, seat="first")
    view = client.seat(created.seat).view()
    assert len(view.legal_actions) > 40
    shown = _text(tui.choices(view))
    assert len(shown.strip().splitlines()) <= 5, shown
    assert " 1. " not in shown
    plays = [a for a in view.legal_actions if a.startswith("play ")]
    for action in plays:
        held, _, flag = action.removeprefix("play ").partition("@")
        line = next(line for line in shown.splitlines() if re.search(rf"\b{held}\b", line))
        assert not flag or re.search(rf"at flag [\d ]*\b{flag}\b", line), (action, line)
    guile = tui.choices(types_pb2.MatchView(legal_actions=[
        "deserter B4@2", "deserter Y8@5", "traitor B4@2 3", "claim 4", "claim 6", "pass"]))
    told = _text(guile)
    assert re.search(r"deserter\s+B4@2 Y8@5", told) and re.search(r"claim\s+4 6", told)
    assert re.search(r"traitor\s+B4@2, then a flag", told) and "play no card" in told


def test_a_tactic_that_cannot_be_played_is_named_with_the_reason(client: Client) -> None:
    """A player held six tactics, a second Leader among them, and "you can" never named
    them: a tactic in hand that cannot be played now is told with the rules' reason."""
    reasons: set[str] = set()
    for seed in range(6):
        created = client.create(opponent="local", clock="none", seed=seed)
        assert created.other is not None
        seats = [client.seat(created.seat), client.seat(created.other)]
        rng = random.Random(seed)
        for seat, view in itertools.islice(turns(seats), 200):
            shown = _text(tui.choices(view))
            for name, why in tui.held_back(view):
                assert re.search(rf"not now\s+{name}: {re.escape(why[:30])}", shown), shown
                reasons.add(why.split(":")[0])
            if view.turn_step == types_pb2.TURN_STEP_PLAY:
                playable = {a.split()[1].partition("@")[0] for a in view.legal_actions
                            if a.startswith("play ")}
                held = {name for name, _ in tui.held_back(view)}
                for name in view.hand:  # every card in hand: playable, a troop, or told
                    assert name in playable or name in held \
                        or not is_tactic(parse_card(name)) \
                        or any(a.split()[0] == name.lower() for a in view.legal_actions), name
            draws = [a for a in view.legal_actions if a == "draw tactic"]  # hold many
            seat.act(*(draws or choose(view, rng)))
    assert any("tactics and your opponent" in r for r in reasons), reasons


def test_a_card_typed_alone_that_has_no_move_is_told_why() -> None:
    """`G9` alone (not held) was passed on as notation and came back "refused (malformed):
    unknown action 'G9'"; a card named is now told: not in the hand, or no move now."""
    view = types_pb2.MatchView(hand=["R7", "FOG"], legal_actions=["play R7@1", "play R7@2"],
                               turn_step=types_pb2.TURN_STEP_PLAY)
    assert tui.not_playable("g9", view) == "G9 is not in your hand"
    assert tui.not_playable("CAVALRY", view) == "CAVALRY is not in your hand"
    assert tui.not_playable("fog", view) == "FOG has no move at this step"
    assert tui.not_playable("3", view) is None and tui.not_playable("draw troop", view) is None


def _columns(shown: str) -> tuple[list[str], int, list[tuple[int, int]]]:
    """The board's lines, the index of the flags' line, and each flag column's span."""
    lines = shown.splitlines()
    middle = next(i for i, line in enumerate(lines) if re.search(r"(\[1\]|▼1▼|▲1▲)", line))
    bars = [i for i, ch in enumerate(lines[middle]) if ch == "│"]
    bars = bars[1:-1]  # the panel's own borders, left and right, hold the board's ten
    return lines, middle, list(itertools.pairwise(bars))


def test_the_board_is_drawn_as_the_table_looks(client: Client) -> None:
    """Each flag a column: the opponent's cards above its mark, the first played nearest
    the flag, the viewer's below, won flags marked toward the winner and the marks and
    colours explained; the last moves told in words."""
    created = client.create(opponent="local", clock="none", seed=8, seat="first", name="Ada")
    assert created.other is not None
    seats = [client.seat(created.seat), client.seat(created.other)]
    rng = random.Random(8)
    events: list[types_pb2.MatchEvent] = []
    for _ in range(300):
        view = seats[0].view()
        if is_finished(view) or (is_my_turn(view) and all(p.flags_claimed for p in view.players)):
            break
        mover = 0 if is_my_turn(view) else 1
        legal = list(seats[mover].view().legal_actions)
        claims = [a for a in legal if a.startswith("claim ")]
        events += seats[mover].act(claims[0] if claims else rng.choice(legal)).events
    view = seats[0].view()
    assert all(p.flags_claimed for p in view.players), "no flag for each seat in 300 steps"
    shown = _text(tui.screen(view, recent=events))
    lines, middle, spans = _columns(shown)
    assert len(spans) == 9, lines[middle]
    for flag, (left, right) in zip(view.flags, spans, strict=True):
        rows = {side: [next((i for i, line in enumerate(lines)
                             if re.search(rf"(^|\s){c}(\s|$)", line[left + 1:right])), -1)
                       for c in cards]  # the line of each card, in the order played
                for side, cards in (("theirs", flag.second_cards), ("mine", flag.first_cards))}
        assert all(0 <= i < middle for i in rows["theirs"]), (flag, shown)
        assert all(i > middle for i in rows["mine"]), (flag, shown)
        assert rows["theirs"] == sorted(rows["theirs"], reverse=True)  # first by the flag
        assert rows["mine"] == sorted(rows["mine"])
        mark = {types_pb2.SEAT_FIRST: f"▼{flag.number}▼", types_pb2.SEAT_SECOND:
                f"▲{flag.number}▲"}.get(flag.claimed_by, f"[{flag.number}]")
        assert mark in lines[middle][left:right], (mark, lines[middle])
    assert "▼n▼ won by you" in shown and "▲n▲ won by" in shown and "R red" in shown
    last = [e for e in events if e.kind == types_pb2.EVENT_KIND_ACTION][-1]
    assert f": {tui.in_words(last.text)}" in shown
    assert tui.in_words("play R7@3") == "played R7 at flag 3"
    assert tui.in_words("draw troop ?troop") == "drew from the troop deck"
    assert tui.in_words("draw tactic FOG") == "drew FOG from the tactic deck"


def test_spectator_board_names_both_seats(client: Client) -> None:
    created = client.create(opponent="local", clock="none", name="Ada")
    shown = _text(tui.screen(client.view(created.match_id)))
    assert "Ada" in shown and "to play a card" in shown
    assert types_pb2.SEAT_FIRST in tui.SEAT_NAMES


def _ai_view(state: object, viewer: int = types_pb2.SEAT_FIRST) -> types_pb2.MatchView:
    """A seat's view against "AI level 1", from a rules-core position (issue #15 tests)."""
    from battleline_rules import dump_position

    view = types_pb2.MatchView(match_id="m1", viewer=viewer, position=dump_position(state))
    view.options.ruleset = "standard"
    view.players.add(seat=types_pb2.SEAT_FIRST, display_name="Ada", occupied=True)
    view.players.add(seat=types_pb2.SEAT_SECOND, display_name="AI level 1", occupied=True,
                     hosted_ai=True)
    return view


def _event(text: str, seat: int = types_pb2.SEAT_SECOND,
           kind: int = types_pb2.EVENT_KIND_ACTION) -> types_pb2.MatchEvent:
    return types_pb2.MatchEvent(number=7, seat=seat, text=text, kind=kind)  # type: ignore[arg-type]


def test_guile_tactics_and_scout_are_told_in_words() -> None:
    state = position(hands=("", ""))
    view = _ai_view(state.view(0))
    traitor = _text(tui.event_line(_event("traitor Y8@6 2"), view))
    assert "traitor Y8@6 2" in traitor
    assert "Traitor: took Y8 from flag 6 to flag 2" in traitor
    assert "Deserter: removed Y8 from flag 6" in _text(tui.event_line(_event("deserter Y8@6"),
                                                                     view))
    assert "Redeploy: moved R7 from flag 3 to flag 5" in _text(
        tui.event_line(_event("redeploy R7@3 5"), view))


def test_the_opponents_claim_comes_with_its_proof() -> None:
    state = position(flags={1: "B2 B3 | R8 R9 R10 | - | 1"}, hands=("G5", ""))
    shown = _text(tui.event_line(_event("claim 1"), _ai_view(state.view(0))))
    assert "AI level 1: claim 1" in shown
    assert ("AI level 1's wedge, sum 27; the best you can still reach with cards off the "
            "table is") in shown


def test_the_end_names_the_winner_shows_discards_and_reveals_every_hand() -> None:
    state = position(flags={1: "B2 B3 | R8 R9 R10"}, hands=("G5", "Y3 P9"),
                     discards=("DESERTER", "TRAITOR Y8"))
    playing = _ai_view(state.view(0))
    assert "discards: you DESERTER; AI level 1 TRAITOR Y8" in _text(tui.screen(playing))
    over = _event("game 1 won by the second seat; series points: the first seat 2, the "
                  "second seat 5", types_pb2.SEAT_UNSPECIFIED, types_pb2.EVENT_KIND_GAME_OVER)
    assert "game 1 won by AI level 1; series points: you 2, AI level 1 5" in _text(
        tui.event_line(over, playing))
    state.resign(0)
    final = _ai_view(state.view(0))
    assert "AI level 1's hand: Y3 P9" in _text(tui.revealed_hands(final))


def test_only_the_viewers_seat_is_you_and_names_cannot_drive_the_terminal() -> None:
    """A name is the other side's text: one saying "You" must not make the loser read
    "you win", and one holding escape sequences must not reach the terminal with them."""
    state = position(hands=("", ""))
    view = _ai_view(state.view(0))
    view.players[1].display_name = "You"
    view.winner, view.end_reason = types_pb2.SEAT_SECOND, types_pb2.END_REASON_RESIGNATION
    assert tui.result(view) == "match over: You (the second seat) wins by resignation"
    assert tui.seat_label(view, types_pb2.SEAT_FIRST) == "you"
    view.players[1].display_name = "\x1b]0;pwned\x07Bob\x1b[2J"
    label = tui.seat_label(view, types_pb2.SEAT_SECOND)
    assert label == "]0;pwnedBob[2J" and not any(ch < " " for ch in label)
    line = _text(tui.event_line(_event("play R7@3\x1b]52;c;ZXZpbA==\x07"), view))
    assert "\x1b" not in line and "\x07" not in line


def test_a_name_drawn_like_you_is_shown_with_its_seat() -> None:
    """Thirteenth audit: "you" with a Cyrillic o, combining accents or full-width letters
    passed the "you" check (fourteenth: so did "You" and Hangul fillers); names of the same
    letters, or as short and not ASCII, carry their seat. Other names stay as they are."""
    view = _ai_view(position(hands=("", "")).view(0))
    lookalikes = ["y\u043eu", "\u0443\u043eu", "y\u0301ou", "\uff59\uff4f\uff55", "Y 0 U", "Your",
                  "\u03a5\u03bf\u03c5", "You\u3164\u3164", "Y\u115fou\u2800"]  # + blank letters
    for name in lookalikes:
        view.players[1].display_name = name
        assert tui.seat_label(view, types_pb2.SEAT_SECOND) == f"{name} (the second seat)"
    for name in ("Alice", "Jos\u00e9", "\u00dcnal", "Yours", "you2"):
        view.players[1].display_name = name
        assert tui.seat_label(view, types_pb2.SEAT_SECOND) == name


def test_a_name_that_reads_as_the_hosted_ais_on_a_seat_not_the_ais_carries_its_seat() -> None:
    """Thirty-first audit: `AꞮ level 5` (a capital small capital I) passed the engine's
    name check, and `watch` drew it as it draws the hosted AI. The view marks the AI's
    seat (`hosted_ai`): a name on any other seat that reads as the AI's carries its seat;
    the AI's own name does not."""
    view = _ai_view(position(hands=("", "")).view(0))
    for name, hosted, shown in (("A\ua7ae level 5", False, "A\ua7ae level 5 (the second seat)"),
                                ("AI level 5", False, "AI level 5 (the second seat)"),
                                ("AI level 5", True, "AI level 5"),
                                ("Aileen", False, "Aileen")):
        view.players[1].display_name, view.players[1].hosted_ai = name, hosted
        assert tui.seat_label(view, types_pb2.SEAT_SECOND) == shown, (name, hosted)


def test_a_cancelled_match_is_told_as_such_and_ends_a_followed_stream() -> None:
    view = types_pb2.MatchView(phase=types_pb2.MATCH_PHASE_FINISHED,
                               end_reason=types_pb2.END_REASON_CANCELLED)
    assert tui.result(view) == "match cancelled: nobody took the other seat"
    cursor = WatchCursor("m", resume_after=1)
    assert not cursor.finished
    cursor.accept(watch_pb2.WatchResponse(
        event=_event("cancelled: no hosted AI took its seat within 60 s",
                     types_pb2.SEAT_UNSPECIFIED, types_pb2.EVENT_KIND_CANCELLED)))
    assert cursor.finished  # the stream ends with that event: no reconnect waits for more



def test_an_event_given_once_is_not_given_again_after_a_snapshot_rewinds() -> None:
    """Third re-test of the twenty-eighth audit: a hostile stream alternating a snapshot
    one event back and that event again had each copy given as new (on one stream `play`
    kept every copy: 1.5 MB a second without end)."""
    cursor = WatchCursor("m")
    rewind = watch_pb2.WatchResponse(snapshot=types_pb2.MatchView(last_event_number=8))
    again = watch_pb2.WatchResponse(event=types_pb2.MatchEvent(number=9))
    assert cursor.accept(rewind) and cursor.accept(again)
    assert cursor.accept(rewind) and not cursor.accept(again)
    assert cursor.accept(watch_pb2.WatchResponse(event=types_pb2.MatchEvent(number=10)))
