"""What the client commands share: the --target option, their client, and how a failed
call reads."""

from __future__ import annotations

import grpc
import typer

from ..client import Client
from ..common import checked_target
from ..errors import BattleLineError
from ..port_owner import OwnerCheck

TARGET_ENV = "BATTLELINE_TARGET"  # the engine, for a serve on another port than the default


def check_target(value: str | None) -> str | None:
    """A --target as given, refused at once where no channel would reach it as written
    (a port past 65535, none at all): gRPC would have gone elsewhere without a word."""
    if value is None:
        return None
    try:
        return checked_target(value, need_port=True)
    except ValueError as err:
        raise typer.BadParameter(str(err)) from None


def client(target: str) -> Client:
    """A client of `target` that sends nothing to another user's process taking its port
    after the engine stops (`port_owner.OwnerCheck`): a game's calls and a watched
    stream's reconnects carry the seat's token."""
    return Client(target, interceptors=(OwnerCheck(target),))


def failure(err: BattleLineError, address: str) -> str:
    """A failed call as a command prints it: the error (made printable by the client
    library) and, where no engine answered, what to start or point at. An engine that
    answers UNAVAILABLE itself (its AI or storage away) names a reason; gRPC does not."""
    if err.code != grpc.StatusCode.UNAVAILABLE or err.reason:
        return str(err)
    return (f"{err}\nno engine answered on {address}: is `battleline serve` running there? "
            f"(`battleline serve --port N`, then --target 127.0.0.1:N or {TARGET_ENV})")
