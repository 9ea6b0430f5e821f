"""GameService: views, actions and resignation. Authenticates, rate-limits and decodes;
the rules are applied in matches.py."""

from __future__ import annotations

from typing import Any

import grpc

from battleline.v1 import game_pb2, game_pb2_grpc
from battleline_rules import SPECTATOR

from . import hints
from .errors import Refusal, invalid
from .matches import parse_actions
from .metrics import ACTIONS, ACTIONS_APPLIED
from .runtime import Runtime, match_id_of, unary


def action_id_of(value: str) -> str:
    if not 1 <= len(value) <= 64 or not value.isprintable():
        raise invalid("bad-action-id", "action_id: 1-64 printable characters")
    return value


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
        return self.rt.matches.view(match, SPECTATOR if seat is None else seat,
                                    request.include_position)

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
                request.include_position)
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
        return await self.rt.matches.resign(match_id, seat, action_id, request.include_position)

    GetHint = unary(hints.servicer_get_hint)
