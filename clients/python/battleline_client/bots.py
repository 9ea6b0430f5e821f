"""Random legal play through the client: for tests, examples and the load tester.

The decision (`choose`) is shared; `play_local` and `aplay_local` are the
sync and asyncio loops that drive both seats of a LOCAL match to its end.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from battleline.v1 import types_pb2

from .aio import AsyncClient, AsyncSeat
from .client import Client, Seat
from .common import is_finished, is_my_turn

_TROOP_PLAY = re.compile(r"^play [A-Z][0-9JQK]+@\d+$")
MAX_REQUESTS = 3000  # a random game takes well under 200


def choose(view: types_pb2.MatchView, rng: random.Random, batch: bool = True) -> list[str]:
    """A uniformly random legal action; with `batch`, a troop play is sent with a draw
    (one request per ordinary turn, as the contract allows)."""
    action = rng.choice(list(view.legal_actions))
    if not batch or not _TROOP_PLAY.match(action):
        return [action]
    if view.options.claim_timing == types_pb2.CLAIM_TIMING_START_OF_TURN:
        return [action]
    decks = [d.deck for d in view.decks if d.count > 0]
    return [action, f"draw {rng.choice(decks)}"] if decks else [action, "end"]


@dataclass(slots=True)
class Finished:
    """A match the bots played to the end."""

    match_id: str
    requests: int  # SubmitAction calls
    actions: int  # actions in them
    final: types_pb2.MatchView


def _mover(views: list[types_pb2.MatchView]) -> int:
    for i, view in enumerate(views):
        if is_my_turn(view):
            return i
    raise RuntimeError(f"nobody can act in match {views[0].match_id} at v{views[0].version}")


def play_local(client: Client, rng: random.Random, *, batch: bool = True,
               **create: object) -> Finished:
    """Create a LOCAL match (auto-claim on, no clock) and play both seats to the end."""
    options: dict[str, object] = {"opponent": "local", "auto_claim": True, "clock": "none",
                                  **create}
    created = client.create(**options)
    assert created.other is not None
    seats: list[Seat] = [client.seat(created.seat), client.seat(created.other)]
    views = [seat.view() for seat in seats]
    requests = actions = 0
    while not is_finished(views[0]):
        i = _mover(views)
        chosen = choose(views[i], rng, batch)
        views[i] = seats[i].act(*chosen).view
        requests, actions = requests + 1, actions + len(chosen)
        if not is_my_turn(views[i]):
            views[1 - i] = seats[1 - i].view()
        if requests > MAX_REQUESTS:
            raise RuntimeError(f"match {created.match_id} does not end")
    return Finished(created.match_id, requests, actions, views[0])


async def aplay_local(client: AsyncClient, rng: random.Random, *, batch: bool = True,
                      **create: object) -> Finished:
    """The asyncio twin of `play_local`."""
    options: dict[str, object] = {"opponent": "local", "auto_claim": True, "clock": "none",
                                  **create}
    created = await client.create(**options)
    assert created.other is not None
    return await aplay_seats([client.seat(created.seat), client.seat(created.other)], rng,
                             batch=batch)


async def aplay_joined(host: AsyncClient, guest: AsyncClient, rng: random.Random, *,
                       batch: bool = True, **create: object) -> Finished:
    """A private OPEN match created by `host` and joined by its invite code by `guest`,
    played to the end: the path two remote players take (a clock is required, so the
    default one runs)."""
    options: dict[str, object] = {"opponent": "open", "auto_claim": True, "private": True,
                                  **create}
    created = await host.create(**options)
    joined = await guest.join(invite_code=created.invite_code, auto_claim=True)
    return await aplay_seats([host.seat(created.seat), guest.seat(joined)], rng, batch=batch)


async def aplay_seats(seats: list[AsyncSeat], rng: random.Random, *,
                      batch: bool = True) -> Finished:
    """Play both seats of a started match to its end with random legal actions."""
    views = [await seat.view() for seat in seats]
    requests = actions = 0
    while not is_finished(views[0]):
        i = _mover(views)
        chosen = choose(views[i], rng, batch)
        views[i] = (await seats[i].act(*chosen)).view
        requests, actions = requests + 1, actions + len(chosen)
        if not is_my_turn(views[i]):
            views[1 - i] = await seats[1 - i].view()
        if requests > MAX_REQUESTS:
            raise RuntimeError(f"match {seats[0].match_id} does not end")
    return Finished(seats[0].match_id, requests, actions, views[0])
