"""Every call counts against its address's call rate (sixth audit: GetView had no limit,
and one address asking 1,800 a second made every other client's 30 times slower); the
hosted AI's calls do not count, since it plays every AI match from one address."""

from __future__ import annotations

import dataclasses

import grpc
import pytest

from battleline_engine.errors import Refusal
from battleline_engine.ratelimit import Rate, RateLimiter

from .harness import AI_KEY, OPEN_LIMITS, Client, Engine, view_status

CALLS = 5
LIMITED = dataclasses.replace(OPEN_LIMITS, call_rate=Rate(per_s=0.001, burst=CALLS),
                              trusted_proxies=("127.0.0.0/8",))


def test_an_address_past_its_call_rate_is_refused_and_others_and_the_ai_are_not(
        redis_url: str) -> None:
    engine = Engine(redis_url, config=LIMITED)
    client = Client.to(engine.address)
    try:
        created = client.create()  # one call of the proxy's own address
        flood = [view_status(client, created.match_id, None, "203.0.113.9")
                 for _ in range(CALLS + 2)]
        assert flood == [grpc.StatusCode.OK] * CALLS + [grpc.StatusCode.RESOURCE_EXHAUSTED] * 2
        assert view_status(client, created.match_id, None, "203.0.113.10") == grpc.StatusCode.OK
        ai = [view_status(client, created.match_id, AI_KEY, "203.0.113.9")
              for _ in range(CALLS + 2)]
        assert ai == [grpc.StatusCode.PERMISSION_DENIED] * (CALLS + 2)  # not its seat, not limited
    finally:
        client.channel.close()
        engine.close()


@pytest.mark.parametrize(("per_s", "says"), [(1000.0, "retry in 1 ms"), (25.0, "retry in 40 ms"),
                                             (0.5, "retry in 2.0 s")])
def test_a_refusal_says_a_delay_a_person_can_read(per_s: float, says: str) -> None:
    """A walkthrough was told "retry in 0.00 s" (the delay was 1.36 ms): it read as
    "retry now", which would be refused again."""
    limiter = RateLimiter(Rate(per_s=per_s, burst=1), "calls")
    limiter.take("a")
    with pytest.raises(Refusal) as refused:
        limiter.take("a")
    assert refused.value.message.endswith(says), refused.value.message
