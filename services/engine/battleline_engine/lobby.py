"""LobbyService: create, join and list matches. Decodes and checks requests; the
work is in seating.py."""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import replace
from typing import Any

import grpc

from battleline.v1 import lobby_pb2, lobby_pb2_grpc
from battleline.v1 import types_pb2 as pb
from battleline_client.look_alike import reads_as_hosted_ai
from battleline_client.printable import BLANK_LETTERS
from battleline_rules import RULESETS, ClaimTiming, Options
from battleline_rules.errors import shown
from battleline_rules.rulesets import validate_options

from . import views
from .errors import invalid, precondition
from .model import ClockKind, Meta, Opponent
from .runtime import Runtime, match_id_of, unary
from .storage import valid_id

MAX_SERIES = 9
# A creator's or joiner's own secret for its seat token (seat_secret): at least 128
# bits of base64, at most 64 characters.
SEAT_SECRET = re.compile(r"[A-Za-z0-9_-]{22,64}")
MIN_CLOCK_MS = 1000
MAX_CLOCK_MS = 24 * 3600 * 1000
_OPPONENTS = {pb.OPPONENT_KIND_OPEN: Opponent.OPEN, pb.OPPONENT_KIND_AI: Opponent.AI,
              pb.OPPONENT_KIND_LOCAL: Opponent.LOCAL}
_TIMING = {pb.CLAIM_TIMING_UNSPECIFIED: ClaimTiming.AFTER_PLAY,
           pb.CLAIM_TIMING_AFTER_PLAY: ClaimTiming.AFTER_PLAY,
           pb.CLAIM_TIMING_START_OF_TURN: ClaimTiming.START_OF_TURN}


def display_name(options: pb.SeatOptions) -> str:
    name = options.display_name.strip()
    if len(name) > 40 or not name.isprintable() or not BLANK_LETTERS.isdisjoint(name):
        raise invalid("bad-name", "display_name: at most 40 printable characters, none of "
                      "them drawn blank (such as the Hangul filler U+3164)")
    if reads_as_hosted_ai(name):
        raise invalid("reserved-name", "display_name: \"AI level ...\" is the hosted AI's "
                      "name; choose another")
    return name


def checked_secret(value: str) -> str:
    """A request's seat_secret, checked ("" when none is sent)."""
    if value and not SEAT_SECRET.fullmatch(value):
        raise invalid("bad-seat-secret", "seat_secret: 22-64 characters of A-Z a-z 0-9 - _ "
                      "(32 random bytes in URL-safe base64), or none")
    return value


def request_digest(request: lobby_pb2.CreateMatchRequest) -> str:
    """What tells the same CreateMatch sent again from another one under its secret."""
    return hashlib.sha256(request.SerializeToString(deterministic=True)).hexdigest()[:32]


def meta_of(request: lobby_pb2.CreateMatchRequest, runtime: Runtime) -> Meta:
    """The match settings a CreateMatch asks for, checked field by field."""
    o = request.options
    if o.ruleset not in RULESETS:
        raise invalid("bad-ruleset",
                      f"ruleset {shown(o.ruleset)}: use one of {', '.join(RULESETS)}")
    if o.claim_timing not in _TIMING:
        raise invalid("bad-option", f"unknown claim_timing {o.claim_timing}")
    hand = o.hand_size or None
    try:
        validate_options(RULESETS[o.ruleset], Options(_TIMING[o.claim_timing], hand, 0))
    except ValueError as err:
        raise invalid("bad-option", str(err)) from None
    if o.series_games > MAX_SERIES:
        raise invalid("bad-option", f"series_games: at most {MAX_SERIES}")
    opponent = _OPPONENTS.get(request.opponent.kind)
    if opponent is None:
        raise invalid("bad-opponent", "opponent.kind: OPEN, AI or LOCAL")
    if request.opponent.private and opponent == Opponent.AI:
        # A private match is joined by its invite code only: the hosted AI never got in.
        raise invalid("bad-opponent", "opponent.private: for OPEN matches (the lobby never "
                      "lists an AI match)")
    if opponent == Opponent.AI and not 1 <= request.opponent.ai_level <= 10:
        raise invalid("bad-opponent", "opponent.ai_level: 1 to 10")
    if opponent == Opponent.AI and not runtime.ai_key:
        raise precondition("no-hosted-ai", "this server runs no hosted AI (started with "
                           "--no-ai or --tls-cert): play a person or a LOCAL match")
    if request.HasField("seed") and opponent != Opponent.LOCAL:
        raise invalid("seed-refused", "a seed is accepted only when both seats are the "
                      "creator's (LOCAL): whoever knows the seed knows the other seat's hand")
    tc = o.time_control
    clock, clock_ms = runtime.config.default_clock, runtime.config.default_clock_ms
    if tc.kind == pb.TIME_CONTROL_KIND_NONE:
        if opponent == Opponent.OPEN:
            raise invalid("bad-clock", "a match against a person needs a clock")
        clock, clock_ms = ClockKind.NONE, 0
        if opponent == Opponent.AI:  # a match nobody moves in must end: it holds an AI's place
            clock, clock_ms = ClockKind.PER_MOVE, runtime.config.ai_idle_ms
    elif tc.kind in (pb.TIME_CONTROL_KIND_PER_MOVE, pb.TIME_CONTROL_KIND_PER_GAME):
        clock = (ClockKind.PER_MOVE if tc.kind == pb.TIME_CONTROL_KIND_PER_MOVE
                 else ClockKind.PER_GAME)
        if not 0 <= tc.limit.nanos < 1_000_000_000:  # not a Duration: refused, not rounded
            raise invalid("bad-clock", "time_control.limit: nanos 0 to 999,999,999")
        if not MIN_CLOCK_MS * 10**6 <= tc.limit.ToNanoseconds() <= MAX_CLOCK_MS * 10**6:
            raise invalid("bad-clock", "time_control.limit: 1 s to 24 h")
        clock_ms = tc.limit.ToMilliseconds()
    elif tc.kind != pb.TIME_CONTROL_KIND_UNSPECIFIED:
        raise invalid("bad-clock", f"unknown time_control.kind {tc.kind}")
    name = display_name(request.seat_options)
    auto = request.seat_options.auto_claim
    return Meta(
        ruleset=o.ruleset, claim_timing=_TIMING[o.claim_timing].value, hand_size=hand,
        series_games=max(1, o.series_games), clock=clock, clock_ms=clock_ms,
        opponent=opponent, private=request.opponent.private,
        ai_level=request.opponent.ai_level if opponent == Opponent.AI else 0,
        seed=request.seed if request.HasField("seed") else None,
        names=(name, name), auto_claim=(auto, auto),
    )


class LobbyServicer(lobby_pb2_grpc.LobbyServiceServicer):
    """battleline.v1.LobbyService."""

    def __init__(self, runtime: Runtime) -> None:
        self.rt = runtime

    @unary
    async def CreateMatch(self, request: lobby_pb2.CreateMatchRequest,
                          context: grpc.aio.ServicerContext[Any, Any],
                          ) -> lobby_pb2.CreateMatchResponse:
        meta = meta_of(request, self.rt)
        secret = checked_secret(request.seat_secret)
        self.rt.create_limit.take(self.rt.callers.key(context))
        if request.seat in (pb.SEAT_CHOICE_FIRST, pb.SEAT_CHOICE_SECOND):
            seat = 0 if request.seat == pb.SEAT_CHOICE_FIRST else 1
        elif request.seat in (pb.SEAT_CHOICE_UNSPECIFIED, pb.SEAT_CHOICE_RANDOM):
            seat = secrets.randbelow(2)
        else:
            raise invalid("bad-seat", f"unknown seat choice {request.seat}")
        if meta.opponent != Opponent.LOCAL:  # the other seat is named by whoever takes it
            names = [meta.names[0]] * 2
            names[1 - seat] = f"AI level {meta.ai_level}" if meta.opponent == Opponent.AI else ""
            meta = replace(meta, names=(names[0], names[1]))
        created = await self.rt.seating.create(meta, seat, self.rt.callers.key(context),
                                               self.rt.config.ai_matches_per_client,
                                               self.rt.config.open_matches_per_client,
                                               secret, request_digest(request) if secret else "")
        seat = created.seat  # a create sent again: the seat it took then
        self.rt.seats.remember(created.token, created.match.match_id, seat)
        if created.other_token:
            self.rt.seats.remember(created.other_token, created.match.match_id, 1 - seat)
        return lobby_pb2.CreateMatchResponse(
            match_id=created.match.match_id, invite_code=created.invite,
            seat=views.seat_enum(seat), seat_token=created.token,
            other_seat_token=created.other_token, match=views.summary(created.match),
        )

    @unary
    async def JoinMatch(self, request: lobby_pb2.JoinMatchRequest,
                        context: grpc.aio.ServicerContext[Any, Any]) -> lobby_pb2.JoinMatchResponse:
        target = request.WhichOneof("target")
        if target is None:
            raise invalid("no-target", "give a match_id or an invite_code")
        name = display_name(request.seat_options)
        if request.join_ticket:
            raise invalid("ticket-retired", "join_ticket is no longer accepted: the hosted "
                          "AI joins with its key (authorization metadata)")
        secret = checked_secret(request.seat_secret)
        ai = self.rt.seats.is_ai(context)
        if not ai:  # the AI joins every AI match from one address: it is no stranger
            self.rt.create_limit.take(self.rt.callers.key(context))
        if target == "match_id":
            match_id = match_id_of(request.match_id)
        else:
            if not request.invite_code or len(request.invite_code) > 64:
                raise invalid("bad-invite", "invite_code: 1-64 characters")
            match_id = await self.rt.seating.resolve("", request.invite_code)
        match, seat, token = await self.rt.seating.join(
            match_id, name, request.seat_options.auto_claim,
            self.rt.ai_key.hash if ai else "", by_invite=target == "invite_code",
            secret=secret)
        if token:
            self.rt.seats.remember(token, match_id, seat)
        return lobby_pb2.JoinMatchResponse(match_id=match_id, seat=views.seat_enum(seat),
                                           seat_token=token, match=views.summary(match))

    @unary
    async def ListOpenMatches(self, request: lobby_pb2.ListOpenMatchesRequest,
                              context: grpc.aio.ServicerContext[Any, Any],
                              ) -> lobby_pb2.ListOpenMatchesResponse:
        if request.ruleset and request.ruleset not in RULESETS:
            raise invalid("bad-ruleset", f"ruleset {shown(request.ruleset)}: use one of "
                          f"{', '.join(RULESETS)}")
        self.rt.list_limit.take(self.rt.callers.key(context))
        limit = min(request.page_size or 50, 200)
        after = None
        if request.page_token:
            ms, dot, match_id = request.page_token.partition(".")
            # isascii: str.isdigit() is also true of digits int() refuses ("²")
            if not (dot and ms.isascii() and ms.isdigit() and len(ms) <= 20
                    and valid_id(match_id)):
                raise invalid("bad-page-token", "page_token: pass next_page_token back unchanged")
            after = (int(ms), match_id)
        found, cursor = await self.rt.seating.list_open(request.ruleset, limit, after)
        return lobby_pb2.ListOpenMatchesResponse(
            matches=[views.summary(m) for m in found],
            next_page_token="" if cursor is None else f"{cursor[0]}.{cursor[1]}",
        )
