"""What the sync and asyncio clients share: requests, results, retry and resume rules.

Everything here is free of I/O, so `client.py` and `aio.py` are thin loops
around the same decisions: which request to send, whether an ABORTED action
may be retried, which stream messages are new after a reconnect, how long to
back off. A fix made here holds for both clients.
"""

from __future__ import annotations

import random
import re
import secrets
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

import grpc
from google.protobuf import duration_pb2

from battleline.v1 import game_pb2, lobby_pb2, record_pb2, types_pb2, watch_pb2

from .backoff import backoff
from .errors import BattleLineError, InvalidRequest

DEFAULT_TARGET = "127.0.0.1:50051"
DEFAULT_TIMEOUT_S = 10.0

OpponentName = Literal["local", "open", "ai"]
SeatName = Literal["first", "second", "random"]
ClockName = Literal["default", "none", "per-move", "per-game"]

# A Watch stream that fails with one of these is reopened from the last event
# seen; any other code (NOT_FOUND, UNAUTHENTICATED...) will not heal by retrying.
STREAM_RETRY_CODES = frozenset({
    grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED, grpc.StatusCode.DEADLINE_EXCEEDED,
    grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL, grpc.StatusCode.RESOURCE_EXHAUSTED,
})

# Unary calls that may be resent as they are (see Client._unary), and how often.
UNARY_RETRY_CODES = frozenset({grpc.StatusCode.UNAVAILABLE})
UNARY_RETRIES = 4
# UNAVAILABLE reasons that no wait heals: the engine has no AI service configured; the
# client would not send to what listens at its target (`port_owner.OwnerCheck`).
NOT_RETRIED = frozenset({"no-ai-service", "untrusted-listener"})
# The longest wait a server's rate refusal may ask for that a call waits out itself
# (and is sent again) instead of raising RateLimited; how long after its first sending
# a call may still be sent again for such a refusal; and the shortest wait between two
# sendings, whatever the refusal asks.
RATE_WAIT_S = 1.0
RATE_WAITS_S = 15.0
MIN_WAIT_S = 0.05


class Retries:
    """When one unary call is sent again. A call refused for a rate (nothing was done)
    waits its short RetryInfo delay out, however often, while the call is younger than
    RATE_WAITS_S: a script playing quickly slows to the server's rate instead of failing
    (counted as retries, a few coroutines sharing one client's rate lost the next token
    five times running and failed); a server that refuses forever, or asks no wait at
    all, holds a call no longer (MIN_WAIT_S between sendings). The wait is stretched by
    up to half at random, so callers refused together do not come back together. Every
    call is resent after UNAVAILABLE, UNARY_RETRIES times, so a restarting server costs
    no error: each is idempotent (actions carry their action id, creates and joins a
    seat secret)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._first_sent = clock()
        self._delays = backoff(0.2, 2.0)
        self._resent = 0

    def wait(self, error: BattleLineError) -> float | None:
        """Seconds to wait before sending the call again, or None to raise `error`."""
        if (error.reason == "rate-limited" and error.retry_after is not None
                and error.retry_after <= RATE_WAIT_S):
            wait = max(MIN_WAIT_S, error.retry_after) * random.uniform(1.0, 1.5)
            if self._clock() + wait - self._first_sent > RATE_WAITS_S:
                return None
            return wait
        if (error.code in UNARY_RETRY_CODES and error.reason not in NOT_RETRIED
                and self._resent < UNARY_RETRIES):
            self._resent += 1
            return max(MIN_WAIT_S, next(self._delays))
        return None


# Called after every unary RPC with (method name, seconds, status code): the load
# tester's latency figures come from here, so no timing code is duplicated.
CallObserver = Callable[[str, float, grpc.StatusCode], None]

_OPPONENTS = {"local": types_pb2.OPPONENT_KIND_LOCAL, "open": types_pb2.OPPONENT_KIND_OPEN,
              "ai": types_pb2.OPPONENT_KIND_AI}
_SEATS = {"first": types_pb2.SEAT_CHOICE_FIRST, "second": types_pb2.SEAT_CHOICE_SECOND,
          "random": types_pb2.SEAT_CHOICE_RANDOM}
_CLOCKS = {"default": types_pb2.TIME_CONTROL_KIND_UNSPECIFIED,
           "none": types_pb2.TIME_CONTROL_KIND_NONE,
           "per-move": types_pb2.TIME_CONTROL_KIND_PER_MOVE,
           "per-game": types_pb2.TIME_CONTROL_KIND_PER_GAME}
_TIMINGS = {"after-play": types_pb2.CLAIM_TIMING_AFTER_PLAY,
            "start-of-turn": types_pb2.CLAIM_TIMING_START_OF_TURN}


# gRPC's names: a socket or resolver name left to gRPC, or addresses (after dns:, ipv4:,
# ipv6:) whose ports are checked as a plain HOST:PORT's.
_OPAQUE_SCHEMES = ("unix:", "unix-abstract:", "vsock:", "xds:")
_ADDRESS_SCHEME = re.compile(r"(?:dns:(?://[^/]*/)?/?|ipv4:|ipv6:)(.*)")
_HOST_PORT = re.compile(r"(\[[^\]]*\]|[^:\[\]]+)(?::([0-9]*))?")


def checked_target(target: str, *, need_port: bool = False) -> str:
    """`target` if a channel reaches it as written: HOST:PORT with a port from 1 to
    65535, HOST alone (gRPC's port 443) unless `need_port`, or a gRPC name (`unix:PATH`,
    `dns:///HOST:PORT`, `ipv4:A:PORT,B:PORT`; their ports checked alike); raises
    ValueError. Why: gRPC took port 112737 as 112737 - 65536 and `HOST:` as port 443, so a
    typo reached whatever listened there."""
    if target.startswith(_OPAQUE_SCHEMES):
        return target
    named = _ADDRESS_SCHEME.fullmatch(target)
    for address in named.group(1).split(",") if named else [target]:
        parts = _HOST_PORT.fullmatch(address)
        if parts is None:  # a bare IPv6 address, or a form gRPC reads itself
            continue
        port = parts.group(2)
        if port is None and not need_port:
            continue
        if not port or len(port) > 5 or not 1 <= int(port) <= 65535:
            raise ValueError(f"{target!r}: give HOST:PORT, the port from 1 to 65535 "
                             f"(for example {DEFAULT_TARGET})")
    return target


@dataclass(frozen=True, slots=True)
class SeatHandle:
    """The credentials of one seat: enough to act, watch and resume later."""

    match_id: str
    token: str
    seat: int  # types_pb2.Seat: SEAT_FIRST or SEAT_SECOND


ClientT = TypeVar("ClientT")


class SeatMemory(Generic[ClientT]):
    """What a seat keeps, whichever client it talks through: its credentials and the
    newest view it has seen, so that an action carries the right version."""

    def __init__(self, client: ClientT, handle: SeatHandle) -> None:
        self.client = client
        self.handle = handle
        self.last_view: types_pb2.MatchView | None = None

    @property
    def match_id(self) -> str:
        return self.handle.match_id

    def remember(self, view: types_pb2.MatchView) -> types_pb2.MatchView:
        """Keep `view` as the last view unless a newer one is already known; returns the
        newest. (A Watch stream can deliver views older than an action's response.)"""
        if self.last_view is None or view.version >= self.last_view.version:
            self.last_view = view
        return self.last_view

    def remember_streamed(self, message: watch_pb2.WatchResponse) -> None:
        """Remember the view a Watch message carries, if any."""
        for field in ("snapshot", "view"):
            if message.HasField(field):
                self.remember(getattr(message, field))


@dataclass(frozen=True, slots=True)
class Created:
    """A new match: the creator's seat, and for LOCAL matches the other seat too."""

    match_id: str
    invite_code: str
    seat: SeatHandle
    other: SeatHandle | None
    summary: types_pb2.MatchSummary


def metadata(token: str | None) -> tuple[tuple[str, str], ...]:
    """The `authorization: Bearer` header of a seat; none for a spectator."""
    return (("authorization", f"Bearer {token}"),) if token else ()


def new_action_id() -> str:
    """A fresh client-chosen action id (128 random bits, 32 characters)."""
    return uuid.uuid4().hex


def resign_request(handle: SeatHandle, action_id: str | None,
                   cancel_only: bool) -> game_pb2.ResignRequest:
    """The Resign request of the sync and asyncio clients."""
    return game_pb2.ResignRequest(match_id=handle.match_id,
                                  action_id=action_id or new_action_id(),
                                  include_position=POSITIONS, cancel_only=cancel_only)


def seat_index(seat: int) -> int:
    """0 for SEAT_FIRST, 1 for SEAT_SECOND (the rules core's numbering)."""
    if seat not in (types_pb2.SEAT_FIRST, types_pb2.SEAT_SECOND):
        raise ValueError(f"not a seat: {seat}")
    return 0 if seat == types_pb2.SEAT_FIRST else 1


def other_seat(seat: int) -> int:
    """The opposing seat enum."""
    return types_pb2.SEAT_SECOND if seat == types_pb2.SEAT_FIRST else types_pb2.SEAT_FIRST


def create_request(
    *, ruleset: str = "standard", opponent: OpponentName = "local", ai_level: int = 0,
    private: bool = False, seat: SeatName = "first", name: str = "", auto_claim: bool = False,
    seed: int | None = None, claim_timing: str | None = None, hand_size: int = 0,
    series_games: int = 0, clock: ClockName = "default", clock_seconds: float = 0,
    seat_secret: str | None = None,
) -> lobby_pb2.CreateMatchRequest:
    """A CreateMatchRequest from plain values (names instead of enum numbers), with a
    secret for the creator's seat token (a fresh one unless given): the same request sent
    again (its answer lost) answers the same match, so a create is resent like any
    idempotent call."""
    time_control = types_pb2.TimeControl(kind=_CLOCKS[clock])
    if clock in ("per-move", "per-game"):
        time_control.limit.CopyFrom(duration_pb2.Duration(seconds=int(clock_seconds),
                                                          nanos=int(clock_seconds % 1 * 1e9)))
    options = types_pb2.MatchOptions(
        ruleset=ruleset, hand_size=hand_size, series_games=series_games,
        claim_timing=_TIMINGS[claim_timing] if claim_timing else types_pb2.CLAIM_TIMING_UNSPECIFIED,
        time_control=time_control)
    request = lobby_pb2.CreateMatchRequest(
        options=options, seat=_SEATS[seat],
        opponent=types_pb2.Opponent(kind=_OPPONENTS[opponent], ai_level=ai_level,
                                    private=private),
        seat_options=types_pb2.SeatOptions(auto_claim=auto_claim, display_name=name),
        seat_secret=seat_secret or secrets.token_urlsafe(32))
    if seed is not None:
        request.seed = seed
    return request


def created_from(response: lobby_pb2.CreateMatchResponse) -> Created:
    """The Created result of a CreateMatchResponse."""
    mine = SeatHandle(response.match_id, response.seat_token, response.seat)
    other = (SeatHandle(response.match_id, response.other_seat_token, other_seat(response.seat))
             if response.other_seat_token else None)
    return Created(response.match_id, response.invite_code, mine, other, response.match)


def join_request(*, match_id: str = "", invite_code: str = "", name: str = "",
                 auto_claim: bool = False,
                 seat_secret: str | None = None) -> lobby_pb2.JoinMatchRequest:
    """A JoinMatchRequest by match id or invite code (exactly one), with a secret for its
    seat token (a fresh one unless given): the same request sent again (its answer lost)
    answers the same seat, so a join is resent like any idempotent call."""
    if bool(match_id) == bool(invite_code):
        raise ValueError("give exactly one of match_id and invite_code")
    options = types_pb2.SeatOptions(auto_claim=auto_claim, display_name=name)
    secret = seat_secret or secrets.token_urlsafe(32)
    if match_id:
        return lobby_pb2.JoinMatchRequest(match_id=match_id, seat_options=options,
                                          seat_secret=secret)
    return lobby_pb2.JoinMatchRequest(invite_code=invite_code, seat_options=options,
                                      seat_secret=secret)


# The engine fills MatchView.position only on request; this library always asks, since
# its bots and the AI worker load views from that text (`load_position`).
POSITIONS = True


def submit_request(match_id: str, version: int, actions: list[str],
                   action_id: str) -> game_pb2.SubmitActionRequest:
    """A SubmitActionRequest; `actions` must not be empty."""
    if not actions:
        raise ValueError("give at least one action")
    return game_pb2.SubmitActionRequest(match_id=match_id, expected_version=version,
                                        action_id=action_id, actions=actions,
                                        include_position=POSITIONS)


def can_retry_stale(view: types_pb2.MatchView, actions: list[str]) -> bool:
    """After ABORTED and a fresh view: is the first action still one the seat may take?

    Only then is resending with the new version the same decision; otherwise the
    caller must look at the new view and decide again."""
    return bool(actions) and actions[0] in view.legal_actions


def is_my_turn(view: types_pb2.MatchView) -> bool:
    """Whether the viewer has something to do now (including an out-of-turn Mud discard)."""
    return view.phase == types_pb2.MATCH_PHASE_PLAYING and len(view.legal_actions) > 0


def answer_times(record: record_pb2.GetRecordResponse, seat: int) -> list[float]:
    """Seconds ``seat`` took to answer each move of the other seat, from a record's commit
    times: how a hosted AI kept to its clock."""
    return [first - waited for waited, first, _ in _turns(record, seat)]


def turn_times(record: record_pb2.GetRecordResponse, seat: int) -> list[float]:
    """Seconds from the other seat's last move to ``seat``'s last action of each of its
    turns (its play, claims and draw): what the other player waits for."""
    return [last - waited for waited, _, last in _turns(record, seat)]


def _turns(record: record_pb2.GetRecordResponse, seat: int) -> list[tuple[float, float, float]]:
    """(the other seat's last commit, ``seat``'s first, ``seat``'s last) of each turn of
    ``seat`` that answers one of the other seat's."""
    turns: list[tuple[float, float, float]] = []
    last: tuple[int, float] | None = None
    for event in record.events:
        at = event.commit_time.ToNanoseconds() / 1e9
        if event.seat == seat and last is not None:
            if last[0] != seat:
                turns.append((last[1], at, at))
            elif turns:
                turns[-1] = (turns[-1][0], turns[-1][1], at)
        last = (event.seat, at)
    return turns


def is_finished(view: types_pb2.MatchView) -> bool:
    """Whether the match (the whole series) is over."""
    return view.phase == types_pb2.MATCH_PHASE_FINISHED


class WatchCursor:
    """Where a Watch stream stands, so a reconnect resumes without gaps or repeats.

    `last` is the number of the last event the consumer has been given (or
    the snapshot's last_event_number); a reconnect asks for `resume_after=last`
    and `accept` drops anything at or before it, or at or before `newest`, which only
    rises: a stream that raised it made progress (a hostile server's snapshot moved
    `last` back, then it sent the same event again and again as if it were new).
    """

    def __init__(self, match_id: str, include_views: bool = False,
                 resume_after: int | None = None) -> None:
        self.match_id = match_id
        self.include_views = include_views
        self.last = resume_after
        self.newest: int | None = None  # the highest event number given: never goes down
        self.finished = False
        self._games = 0  # games in the series, known once a snapshot arrived
        self._done = 0  # games of the series over so far
        self._forced = False  # a resignation or timeout ends the match with its game

    def request(self) -> watch_pb2.WatchRequest:
        """The request for the next (re)connection."""
        request = watch_pb2.WatchRequest(match_id=self.match_id,
                                         include_views=self.include_views,
                                         include_position=POSITIONS)
        if self.last is not None:
            request.resume_after = self.last
        return request

    def accept(self, response: watch_pb2.WatchResponse) -> bool:
        """Record a message; False for an event already given (after a reconnect)."""
        if response.HasField("snapshot"):
            snapshot = response.snapshot
            self.last = snapshot.last_event_number
            self.finished = is_finished(snapshot)
            self._games = max(1, snapshot.options.series_games)
            self._done = max(0, snapshot.game_number - 1)
            return True
        event = response.event
        if any(seen is not None and event.number <= seen for seen in (self.last, self.newest)):
            return False  # given already, a snapshot's rewind notwithstanding
        self.last = event.number
        self.newest = max(self.newest or 0, event.number)
        self._follow(event)
        if response.HasField("view"):
            self.finished = is_finished(response.view)
        return True

    def _follow(self, event: types_pb2.MatchEvent) -> None:
        """Notice the match's end from the events alone (streams without views)."""
        if event.kind == types_pb2.EVENT_KIND_CANCELLED:
            self.finished = True
        elif event.kind in (types_pb2.EVENT_KIND_RESIGNED, types_pb2.EVENT_KIND_TIMEOUT):
            self._forced = True
        elif event.kind == types_pb2.EVENT_KIND_GAME_OVER and self._games:
            self._done += 1
            self.finished = self._forced or self._done >= self._games

    def over_at(self, view: types_pb2.MatchView) -> bool:
        """Whether `view` (fetched before resuming) shows nothing is left to stream.

        Needed because the engine does not end a stream resumed after the last
        event of a finished match: it waits for events that never come. A resume point
        past the match's last event is refused as the engine refuses it (it ended the
        stream without a word when the match was over)."""
        if self.last is not None and self.last > view.last_event_number:
            raise InvalidRequest(f"resume_after {self.last} is after the last event "
                                 f"({view.last_event_number})", reason="bad-resume")
        self.finished = self.finished or (
            is_finished(view) and self.last is not None and view.last_event_number <= self.last)
        return self.finished

    def should_reconnect(self, error: BattleLineError) -> bool:
        """Whether a stream that failed with `error` is worth reopening."""
        return (not self.finished and error.code in STREAM_RETRY_CODES
                and error.reason not in NOT_RETRIED)


__all__ = [
    "DEFAULT_TARGET", "DEFAULT_TIMEOUT_S", "STREAM_RETRY_CODES", "CallObserver", "Created",
    "SeatHandle", "WatchCursor", "backoff", "can_retry_stale", "checked_target",
    "create_request", "created_from", "is_finished", "is_my_turn", "join_request", "metadata",
    "new_action_id", "other_seat", "seat_index", "submit_request",
]
