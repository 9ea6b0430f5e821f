"""Wrong seat tokens are rate-limited per address (audit finding: they were not, which is
harmless for 256-bit tokens and not for a weak AI key): each costs a Redis lookup, and a
flood of them is refused before the lookup while the right tokens keep working."""

from __future__ import annotations

import dataclasses
import secrets
import socket
from collections.abc import Iterator

import grpc
import pytest

from battleline.v1 import game_pb2
from battleline_engine.ratelimit import Rate

from .harness import OPEN_LIMITS, Client, Engine, auth, view_status
from .test_errors import details

GUESSES = 3
UNAUTHENTICATED, EXHAUSTED = grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.RESOURCE_EXHAUSTED


LIMITED = dataclasses.replace(OPEN_LIMITS, token_guess_rate=Rate(per_s=0.001, burst=GUESSES),
                              trusted_proxies=("127.0.0.0/8",))


@pytest.fixture
def engines(redis_url: str) -> Iterator[tuple[Engine, Engine]]:
    """Two engines on one Redis (a token one hands out is not cached by the other), each
    allowing an address three wrong tokens and believing x-forwarded-for from loopback
    (so one test can speak from two addresses)."""
    first, second = Engine(redis_url, config=LIMITED), Engine(redis_url, config=LIMITED)
    yield first, second
    first.close()
    second.close()


def test_wrong_tokens_are_refused_before_a_lookup_once_an_address_spent_its_guesses(
        engines: tuple[Engine, Engine]) -> None:
    maker = Client.to(engines[0].address)
    made = [maker.create() for _ in range(2)]
    created = made[0]
    client = Client.to(engines[1].address)  # which looks the tokens up in Redis
    guesser, other = "203.0.113.5", "203.0.113.6"
    right = [view_status(client, match.match_id, token, guesser)
             for match in made for token in (match.seat_token, match.other_seat_token)]
    assert right == [grpc.StatusCode.OK] * 4  # more than GUESSES: found ones are given back
    codes = [view_status(client, created.match_id, secrets.token_urlsafe(32), guesser)
             for _ in range(GUESSES + 2)]
    assert codes == [UNAUTHENTICATED] * GUESSES + [EXHAUSTED] * 2
    with pytest.raises(grpc.RpcError) as refused:
        client.game.GetView(game_pb2.GetViewRequest(match_id=created.match_id),
                            metadata=[*auth("wrong"), ("x-forwarded-for", guesser)], timeout=10)
    assert details(refused.value)["ErrorInfo"].reason == "rate-limited"  # type: ignore[attr-defined]
    # A token already known still works from the guessing address, and other addresses
    # keep their own budget.
    assert view_status(client, created.match_id, created.seat_token, guesser) == grpc.StatusCode.OK
    assert view_status(client, created.match_id, "wrong", other) == UNAUTHENTICATED
    client.channel.close()
    maker.channel.close()


def test_a_lookup_the_store_cannot_answer_is_not_charged_as_a_guess() -> None:
    """While Redis is unreachable every lookup fails with UNAVAILABLE; none of them may use
    up the address's guesses (they used to: a client retrying through a Redis restart was
    then refused its own right token for minutes)."""
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        unreachable = f"redis://127.0.0.1:{sock.getsockname()[1]}"
    engine = Engine(unreachable, config=LIMITED)
    client = Client.to(engine.address)
    try:
        codes = [view_status(client, "m1", f"m1.{secrets.token_urlsafe(32)}", "203.0.113.7")
                 for _ in range(GUESSES + 1)]
    finally:
        client.channel.close()
        engine.close()
    assert codes == [grpc.StatusCode.UNAVAILABLE] * (GUESSES + 1)
