"""Every call counts against its address's call rate (sixth audit: GetView had no limit,
and one address asking 1,800 a second made every other client's 30 times slower); the
hosted AI's calls do not count, since it plays every AI match from one address."""

from __future__ import annotations

import dataclasses

import grpc
import pytest

from battleline_engine.errors import Refusal
from battleline_engine.ratelimit import Rate, RateLimiter, delay_text

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


@pytest.mark.parametrize(("seconds", "says"), [(0.00136, "1 ms"), (0.0001, "1 ms"), (0.04, "40 ms"),
                                               (0.9996, "1.0 s"), (2.0, "2.0 s")])
def test_a_retry_delay_is_said_as_a_person_reads_it(seconds: float, says: str) -> None:
    """A walkthrough was told "retry in 0.00 s" (the delay was 1.36 ms): it read as
    "retry now", which would be refused again."""
    assert delay_text(seconds) == says


def test_a_refusal_says_when_the_bucket_has_the_token() -> None:
    """The message and the RetryInfo name the same delay: what the bucket lacks."""
    now = [100.0]
    limiter = RateLimiter(Rate(per_s=25, burst=1), "calls", clock=lambda: now[0])
    limiter.take("a")
    now[0] += 0.01
    with pytest.raises(Refusal) as refused:
        limiter.take("a")
    assert refused.value.message == "too many calls: retry in 30 ms"
    assert refused.value.retry_after_s == pytest.approx(0.03)
