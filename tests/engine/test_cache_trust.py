"""An engine process trusts what it cached of a match or a token for `CACHE_TRUST_S`
only: a match made under a seat secret names its id and tokens again once its mark is
gone (`SECRET_ID_KEPT_S` past its own expiry, eight days since the thirty-fourth audit,
400 before), and no cache may still take them for the old match's then."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from battleline_engine.auth import Callers, Seats
from battleline_engine.model import CACHE_TRUST_S, SECRET_ID_KEPT_S, Match, Meta, StateCache
from battleline_engine.ratelimit import Rate, RateLimiter
from battleline_engine.storage import CommitStatus, Storage, hash_token
from battleline_engine.storage.ai import KEEP_REQUESTS_MS
from battleline_engine.storage.connection import Connection
from battleline_engine.storage.matches import MatchRecord, match_key
from battleline_rules import dump_position, new_game


@dataclass
class FakeClock:
    now: float = 1_000.0

    def __call__(self) -> float:
        return self.now


def _match(version: int) -> Match:
    state = new_game("standard", None, version)
    record = MatchRecord("m1", dump_position(state), version, 0, "playing", 0, 0, 0)
    return Match(record=record, meta=Meta(ruleset="standard"), state=state)


def test_the_mark_outlasts_whatever_a_cache_trusts_and_the_ai_requests() -> None:
    # A cache entry is made at the latest when the old match is last read, before its
    # own expiry, and is trusted CACHE_TRUST_S from then; the mark lasts longer. A request
    # for the hosted AI stays in its stream for a week: a match made again under the id
    # while it did would have two requests for one seat (a re-test).
    assert SECRET_ID_KEPT_S > CACHE_TRUST_S
    assert SECRET_ID_KEPT_S > KEEP_REQUESTS_MS / 1000


def test_a_cached_match_is_trusted_for_a_day_and_then_read_again() -> None:
    clock = FakeClock()
    cache = StateCache(clock=clock)
    old = _match(57)
    cache.remember(old)
    clock.now += CACHE_TRUST_S - 1
    assert cache.latest("m1") is old and cache.match("m1", 57) is old
    clock.now += 2
    assert cache.latest("m1") is None and cache.match("m1", 57) is None
    # A new match under the same id starts again at version 1: it is kept, where the
    # old match's higher version would have refused it as a slower read.
    new = _match(1)
    cache.remember(new)
    assert cache.match("m1", 1) is new


def test_a_later_version_still_wins_over_a_slower_read_while_trusted() -> None:
    clock = FakeClock()
    cache = StateCache(clock=clock)
    later = _match(5)
    cache.remember(later)
    cache.remember(_match(4))
    assert cache.latest("m1") is later


def test_a_cached_token_is_trusted_for_a_day_and_then_looked_up_again(redis_url: str) -> None:
    async def main() -> None:
        storage = Storage(Connection.from_url(redis_url))
        clock = FakeClock()
        seats = Seats(storage, Callers(), RateLimiter(Rate(1, 5), "guesses"), clock=clock)

        async def make(seat: int) -> None:
            made = await storage.matches.create(
                "m1", "S0", status="playing", seats={seat: hash_token("m1.a")},
                fields={"ruleset": "standard"}, events=[{"kind": "created"}])
            assert made.status is CommitStatus.OK

        try:
            await make(0)
            assert await seats.of("m1.a", "198.51.100.1") == ("m1", 0)
            # The match is gone and a new one takes its id, the token on the other seat.
            parts = ("m", "ev", "idem", "seats")
            await storage.redis.delete(*(match_key("m1", part) for part in parts))
            await make(1)
            clock.now += CACHE_TRUST_S - 1
            assert await seats.of("m1.a", "198.51.100.1") == ("m1", 0)  # still trusted
            clock.now += 2
            assert await seats.of("m1.a", "198.51.100.1") == ("m1", 1)
        finally:
            await storage.close()

    asyncio.run(main())
