"""Everything a viewer receives is built here, from the rules core's view.

`write_view` is the only function that turns a stored match into a MatchView
and it reads only the rules core's views (`state.view(SPECTATOR)` for what
every viewer shares, `state.view(viewer)` for the rest), so hands, deck order,
the seed, deck52's removed cards and the opponent's Scout returns cannot leak
through a forgotten field. `event_message` projects stored events with `redact_event`.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Final

from google.protobuf import duration_pb2, timestamp_pb2

from battleline.v1 import types_pb2 as pb
from battleline_rules import (
    SPECTATOR,
    UNKNOWN_TACTIC,
    UNKNOWN_TROOP,
    Action,
    Event,
    GameState,
    Kind,
    Phase,
    Termination,
    card_name,
    dump_position,
    parse_action,
    parse_card,
    redact_event,
)
from battleline_rules.board import Flag
from battleline_rules.cards import CARD_COUNT, NO_CARD, is_tactic
from battleline_rules.notation import flag_text

from .clocks import ClockState, left_ms
from .model import CANCELLED, ClockKind, Match, Meta, Status, action_text
from .storage import StoredEvent

FULL: Final = -2  # viewer of a finished match's record: nothing hidden
# card id -> name, placeholders included: views name hundreds of cards per call.
NAMES: Final = {c: card_name(c) for c in (UNKNOWN_TACTIC, UNKNOWN_TROOP, *range(CARD_COUNT))}
TACTIC_IDS: Final = frozenset(c for c in NAMES if is_tactic(c))

SEATS: Final = (pb.SEAT_FIRST, pb.SEAT_SECOND)


@lru_cache(maxsize=16384)
def _stored_action(text: str) -> Action:
    """`parse_action` of a stored event's text, memoised (Actions are immutable)."""
    return parse_action(text)
_PHASES: Final = {Status.WAITING: pb.MATCH_PHASE_WAITING, Status.PLAYING: pb.MATCH_PHASE_PLAYING,
                  Status.FINISHED: pb.MATCH_PHASE_FINISHED}
_STEPS: Final = {
    Phase.PLAY: pb.TURN_STEP_PLAY,
    Phase.FINISH: pb.TURN_STEP_FINISH,
    Phase.SCOUT_DRAW: pb.TURN_STEP_SCOUT_DRAW,
    Phase.SCOUT_RETURN: pb.TURN_STEP_SCOUT_RETURN,
    Phase.MUD_DISCARD: pb.TURN_STEP_MUD_DISCARD,
}
_END_REASONS: Final = {
    Termination.BREAKTHROUGH: pb.END_REASON_BREAKTHROUGH,
    Termination.ENVELOPMENT: pb.END_REASON_ENVELOPMENT,
    Termination.FLANKS: pb.END_REASON_FLANKS,
    Termination.STALEMATE: pb.END_REASON_STALEMATE,
    Termination.RESIGNATION: pb.END_REASON_RESIGNATION,
}
_CLAIM_TIMING: Final = {"after-play": pb.CLAIM_TIMING_AFTER_PLAY,
                        "start-of-turn": pb.CLAIM_TIMING_START_OF_TURN}
_CLOCK_KINDS: Final = {"per_move": pb.TIME_CONTROL_KIND_PER_MOVE,
                       "per_game": pb.TIME_CONTROL_KIND_PER_GAME,
                       "none": pb.TIME_CONTROL_KIND_NONE}
EVENT_KINDS: Final = {
    "created": pb.EVENT_KIND_CREATED, "joined": pb.EVENT_KIND_JOINED,
    "action": pb.EVENT_KIND_ACTION, "game_started": pb.EVENT_KIND_GAME_STARTED,
    "game_over": pb.EVENT_KIND_GAME_OVER, "resigned": pb.EVENT_KIND_RESIGNED,
    "timeout": pb.EVENT_KIND_TIMEOUT, CANCELLED: pb.EVENT_KIND_CANCELLED,
}


def seat_enum(seat: int | None) -> pb.Seat.ValueType:
    """Rules-core seat (0, 1, None/-1) to the API enum."""
    return SEATS[seat] if seat in (0, 1) else pb.SEAT_UNSPECIFIED


def _duration(ms: int) -> duration_pb2.Duration:
    out = duration_pb2.Duration()
    out.FromMilliseconds(ms)
    return out


def _timestamp(ms: int) -> timestamp_pb2.Timestamp:
    out = timestamp_pb2.Timestamp()
    out.FromMilliseconds(ms)
    return out


def options_message(meta: Meta) -> pb.MatchOptions:
    """The MatchOptions a match was created with (defaults filled in)."""
    return pb.MatchOptions(
        ruleset=meta.ruleset,
        claim_timing=_CLAIM_TIMING[meta.claim_timing],
        hand_size=meta.hand_size or 0,
        series_games=meta.series_games,
        time_control=pb.TimeControl(
            kind=_CLOCK_KINDS[meta.clock], limit=_duration(meta.clock_ms)
        ),
    )


@lru_cache(maxsize=1024)
def _options_of(meta: Meta) -> pb.MatchOptions:
    """`options_message`, once per distinct settings (copied into each view)."""
    return options_message(meta)


# (flag number, flag text) -> that flag's encoded MatchView.flags entry. The position
# text names everything on a flag and the rules core keeps it on the flag until the flag
# changes (the commit has just written it), so a view re-encodes only what the last turn
# changed, and finds again the flags of a match reloaded from Redis. Emptied when full.
_FLAG_BYTES: dict[tuple[int, str], bytes] = {}
_FLAG_BYTES_MAX: Final = 1 << 15


def _encode_flag(key: tuple[int, str], flag: Flag) -> bytes:
    if len(_FLAG_BYTES) >= _FLAG_BYTES_MAX:
        _FLAG_BYTES.clear()
    encoded = _FLAG_BYTES[key] = pb.MatchView(flags=[pb.Flag(
        number=key[0],
        first_cards=[NAMES[c] for c in flag.cards[0]],
        second_cards=[NAMES[c] for c in flag.cards[1]],
        environment=[NAMES[c] for c, _ in flag.env],
        claimed_by=seat_enum(flag.claimed),
    )]).SerializeToString()
    return encoded


def _flags_bytes(flags: list[Flag]) -> bytes:
    """The encoded `flags` field of a MatchView (every entry, in order)."""
    out = []
    for number, flag in enumerate(flags, 1):
        key = (number, flag_text(flag))
        encoded = _FLAG_BYTES.get(key)
        out.append(encoded if encoded is not None else _encode_flag(key, flag))
    return b"".join(out)


def summary(match: Match) -> pb.MatchSummary:
    """A match as the lobby lists it."""
    return pb.MatchSummary(
        match_id=match.match_id,
        options=options_message(match.meta),
        open_seat=seat_enum(match.meta.open_seat),
        host_name=match.meta.names[1 - match.meta.open_seat] if match.meta.open_seat >= 0
        else match.meta.names[0],
        create_time=_timestamp(match.record.created_ms),
        phase=_PHASES[match.status],
    )


def end_reason(match: Match) -> pb.EndReason.ValueType:
    """Why the current game ended (END_REASON_UNSPECIFIED while it goes on)."""
    if match.end == CANCELLED:
        return pb.END_REASON_CANCELLED
    outcome = match.state.outcome()
    if outcome is None:
        return pb.END_REASON_UNSPECIFIED
    if match.end == "timeout":
        return pb.END_REASON_TIMEOUT  # the clock is the engine's: its loser resigned
    if outcome.winner is None:
        return pb.END_REASON_DRAW
    return _END_REASONS[outcome.termination]


def _add_players(out: pb.MatchView, match: Match, view: GameState) -> None:
    with_tactics = bool(view.ruleset.tactics)
    names, score, occupied = match.meta.names, match.score, match.meta.occupied
    for seat in (0, 1):
        hand = view.hands[seat]
        player = out.players.add(
            seat=SEATS[seat],
            display_name=names[seat],
            discards=[NAMES[c] for c in view.discards[seat]],
            tactics_played=view.tactics_played[seat],
            flags_claimed=[f.claimed for f in view.flags].count(seat),
            series_score=score[seat],
            occupied=seat in occupied,
            hosted_ai=seat == match.meta.ai_seat,
        )
        if with_tactics:
            tactics = sum(1 for c in hand if c in TACTIC_IDS)
            player.hand_counts.add(deck="troop", count=len(hand) - tactics)
            player.hand_counts.add(deck="tactic", count=tactics)
        else:
            player.hand_counts.add(deck="troop", count=len(hand))


def _clocks(match: Match, now_ms: int) -> list[pb.Clock]:
    meta = match.meta
    if meta.clock == ClockKind.NONE:
        return []
    clock = ClockState.parse(match.fields)
    out = []
    for seat in (0, 1):
        running = clock.seat == seat and match.status == Status.PLAYING
        item = pb.Clock(seat=SEATS[seat], running=running,
                        remaining=_duration(left_ms(meta, clock, seat, now_ms)))
        if running:
            item.deadline.CopyFrom(_timestamp(clock.deadline_ms(meta)))
        out.append(item)
    return out


def _public_view(match: Match) -> bytes:
    """The encoded MatchView fields that every viewer of this version shares: the
    spectator's view without its viewer, clocks and position. Built once per version
    (a turn is viewed by both seats, and watchers) and kept on the match."""
    if match.public_view is not None:
        return match.public_view
    view = match.state.view(SPECTATOR)
    playing = match.status == Status.PLAYING and not view.is_over
    out = pb.MatchView(
        match_id=match.match_id,
        version=match.version,
        phase=_PHASES[match.status],
        current_seat=seat_enum(view.current_player if playing else -1),
        turn_step=_STEPS.get(view.phase, pb.TURN_STEP_UNSPECIFIED) if playing
        else pb.TURN_STEP_UNSPECIFIED,
        winner=seat_enum(match.winner if match.finished else view.winner)
        if view.is_over else pb.SEAT_UNSPECIFIED,
        end_reason=end_reason(match),
        game_number=match.game,
        last_event_number=match.record.last_event,
    )
    out.options.CopyFrom(_options_of(match.meta))
    out.MergeFromString(_flags_bytes(view.flags))
    _add_players(out, match, view)
    # The rules core keeps troops in decks[0] and tactics in decks[1]: no scan needed.
    out.decks.add(deck="troop", count=len(view.decks[0]))
    if view.ruleset.tactics:
        out.decks.add(deck="tactic", count=len(view.decks[1]))
    match.public_view = out.SerializeToString()
    return match.public_view


def write_view(out: pb.MatchView, match: Match, viewer: int, now_ms: int,
               position: bool = False) -> None:
    """Write the MatchView of `viewer` (0, 1 or SPECTATOR) into `out`, an empty one (a
    response's field: no copy): the spectator's (shared by every viewer, see
    `_public_view`) plus what `state.view(viewer)` shows only this viewer.

    `position` (the request's include_position) adds the position text: writing it
    is a third of a view's cost and most clients never read it.
    """
    out.MergeFromString(_public_view(match))
    out.viewer = seat_enum(viewer)
    if match.meta.clock != ClockKind.NONE:
        out.clocks.extend(_clocks(match, now_ms))
    viewer = _shown_to(match, viewer)
    seated = viewer in (0, 1)
    if not (seated or position):
        return  # a spectator sees the shared part only
    view = match.state.view(viewer)
    if position:
        out.position = dump_position(view)
    if not seated:
        return
    out.hand.extend([NAMES[c] for c in view.hands[viewer]])
    out.scout_returned.extend([NAMES[c] for c in reversed(view.returned[viewer])])
    if out.current_seat == SEATS[viewer]:
        legal = view.legal_actions()
        out.legal_actions.extend(map(action_text, legal))
        for action in legal:
            if action.kind is not Kind.CLAIM:
                break  # claims come first
            verdict = view.claim_verdict(action.flag, viewer)
            out.claimable_flags.add(number=action.flag + 1, proof=verdict.explain())


def event_text(fields: dict[str, str], viewer: int) -> str:
    """One stored event as `viewer` may read it (FULL: unredacted)."""
    stored = fields.get("a")
    if not stored:
        return fields.get("x", "")
    seat = int(fields["s"])
    drawn = parse_card(fields["d"]) if fields.get("d") else NO_CARD
    event = Event(0, seat, _stored_action(stored), drawn)
    if viewer != FULL:
        event = redact_event(event, viewer)
    text = action_text(event.action)
    return f"{text} {NAMES[event.drawn]}" if event.drawn != NO_CARD else text


def event_message(stored: StoredEvent, viewer: int) -> pb.MatchEvent:
    """A stored event projected for `viewer` (0, 1, SPECTATOR or FULL)."""
    f = stored.fields
    return pb.MatchEvent(
        number=stored.number,
        kind=EVENT_KINDS[f["k"]],
        seat=seat_enum(int(f["s"])) if f.get("s") else pb.SEAT_UNSPECIFIED,
        text=event_text(f, viewer),
        version=int(f["v"]),
        commit_time=_timestamp(int(f["t"])),
    )


def add_event(events: Any, number: int, fields: dict[str, str], viewer: int) -> None:
    """Append `event_message(StoredEvent(number, fields), viewer)` to a repeated
    MatchEvent field, built in place (no message copied)."""
    item = events.add(
        number=number,
        kind=EVENT_KINDS[fields["k"]],
        seat=seat_enum(int(fields["s"])) if fields.get("s") else pb.SEAT_UNSPECIFIED,
        text=event_text(fields, viewer),
        version=int(fields["v"]),
    )
    item.commit_time.FromMilliseconds(int(fields["t"]))


def record_viewer(match: Match, viewer: int) -> int:
    """Who a record is projected for: nobody is hidden from once the match is over."""
    return FULL if match.finished else viewer


def position_text(match: Match, viewer: int) -> str:
    """The position for a record: full once over, else the viewer's redacted view."""
    if viewer == FULL:
        return dump_position(match.state)
    return dump_position(match.state.view(_shown_to(match, viewer)))


def _shown_to(match: Match, viewer: int) -> int:
    """Whose view `viewer` gets: while the match waits for its other seat, a spectator's.
    The waiting deal is thrown away when the seat is taken (`Seating.join` deals again):
    a creator who saw its hand could otherwise cancel and create again until it liked
    one (seventh audit)."""
    return SPECTATOR if match.status == Status.WAITING else viewer
