"""Every call counts against its address's call rate (sixth audit: GetView had no limit,
and one address asking 1,800 a second made every other client's 30 times slower); the
hosted AI's calls do not count, since it plays every AI match from one address."""

from __future__ import annotations

import dataclasses

import grpc

from battleline_engine.ratelimit import Rate

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
