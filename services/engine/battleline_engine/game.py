"""GameService: views, actions and resignation. Authenticates, rate-limits and decodes;
the rules are applied in matches.py, and the answers are built here."""

from __future__ import annotations

from typing import Any

import grpc

from battleline.v1 import game_pb2, game_pb2_grpc
from battleline_rules import SPECTATOR

from . import hints, views
from .errors import Refusal, invalid
from .matches import Answer, Outcome, parse_actions
from .metrics import ACTIONS, ACTIONS_APPLIED
from .runtime import Runtime, match_id_of, unary
from .storage import now_ms


def action_id_of(value: str) -> str:
    if not 1 <= len(value) <= 64 or not value.isprintable():
        raise invalid("bad-action-id", "action_id: 1-64 printable characters")
    return value


def _submitted(position: bool) -> Answer[game_pb2.SubmitActionResponse]:
    """SubmitAction's answer: the new version, the events for the seat, its view."""

    def build(outcome: Outcome, seat: int) -> game_pb2.SubmitActionResponse:
        response = game_pb2.SubmitActionResponse(version=outcome.match.version)
        for i, fields in enumerate(outcome.events):
            views.add_event(response.events, outcome.first_event + i, fields, seat)
        views.write_view(response.view, outcome.match, seat, now_ms(), position)
        return response

    return Answer(build, game_pb2.SubmitActionResponse.SerializeToString,
                  game_pb2.SubmitActionResponse.FromString)


def _resigned(position: bool) -> Answer[game_pb2.ResignResponse]:
    """Resign's answer: the seat's view of the finished match."""

    def build(outcome: Outcome, seat: int) -> game_pb2.ResignResponse:
        response = game_pb2.ResignResponse()
        views.write_view(response.view, outcome.match, seat, now_ms(), position)
        return response

    return Answer(build, game_pb2.ResignResponse.SerializeToString,
                  game_pb2.ResignResponse.FromString)


# By `include_position`: the answers differ only in that.
SUBMITTED = {position: _submitted(position) for position in (False, True)}
RESIGNED = {position: _resigned(position) for position in (False, True)}


class GameServicer(game_pb2_grpc.GameServiceServicer):
    """battleline.v1.GameService."""

    def __init__(self, runtime: Runtime) -> None:
        self.rt = runtime

    @unary
    async def GetView(self, request: game_pb2.GetViewRequest,
                      context: grpc.aio.ServicerContext[Any, Any]) -> game_pb2.GetViewResponse:
        match_id = match_id_of(request.match_id)
        seat = await self.rt.seats.optional(context, match_id)
        match = await self.rt.matches.read(match_id)
        response = game_pb2.GetViewResponse()
        views.write_view(response.view, match, SPECTATOR if seat is None else seat, now_ms(),
                         request.include_position)
        return response

    @unary
    async def SubmitAction(self, request: game_pb2.SubmitActionRequest,
                           context: grpc.aio.ServicerContext[Any, Any],
                           ) -> game_pb2.SubmitActionResponse:
        match_id = match_id_of(request.match_id)
        action_id = action_id_of(request.action_id)
        actions = parse_actions(list(request.actions))
        seat = await self.rt.seats.require(context, match_id)
        self.rt.action_limit.take(f"{match_id}/{seat}")
        try:
            response = await self.rt.matches.submit(
                match_id, seat, request.expected_version, action_id, actions,
                SUBMITTED[request.include_position])
        except Refusal as refusal:
            ACTIONS.labels("conflict" if refusal.reason == "stale-version" else "rejected").inc()
            raise
        ACTIONS_APPLIED.inc()
        return response

    @unary
    async def Resign(self, request: game_pb2.ResignRequest,
                     context: grpc.aio.ServicerContext[Any, Any]) -> game_pb2.ResignResponse:
        match_id = match_id_of(request.match_id)
        action_id = action_id_of(request.action_id)
        seat = await self.rt.seats.require(context, match_id)
        self.rt.action_limit.take(f"{match_id}/{seat}")
        return await self.rt.matches.resign(match_id, seat, action_id,
                                            RESIGNED[request.include_position],
                                            cancel_only=request.cancel_only)

    GetHint = unary(hints.servicer_get_hint)
