"""The Python client library against a real engine and Redis: whole matches (sync and
asyncio), lobby flows, the ABORTED retry, and every refusal as its typed exception."""

from __future__ import annotations

import asyncio
import random

import grpc
import pytest

from battleline.v1 import record_pb2, types_pb2
from battleline_client import common, errors
from battleline_client.aio import AsyncClient
from battleline_client.bots import aplay_local, choose, play_local
from battleline_client.client import Client
from battleline_client.common import (
    answer_times,
    checked_target,
    is_finished,
    is_my_turn,
    turn_times,
)
from battleline_engine.ratelimit import Rate
from battleline_engine.runtime import EngineConfig
from battleline_host.local import LocalService


def _check_over(client: Client, match_id: str, final: types_pb2.MatchView) -> None:
    assert final.phase == types_pb2.MATCH_PHASE_FINISHED
    assert final.end_reason != types_pb2.END_REASON_UNSPECIFIED
    record = client.record(match_id)
    assert record.complete
    assert [e.number for e in record.events] == list(range(1, len(record.events) + 1))


@pytest.mark.parametrize("ruleset", ["standard", "basic", "deck52"])
def test_sync_client_plays_complete_matches(client: Client, ruleset: str) -> None:
    done = play_local(client, random.Random(ruleset), ruleset=ruleset)
    _check_over(client, done.match_id, done.final)


def test_sync_client_plays_one_action_per_request(client: Client) -> None:
    done = play_local(client, random.Random(5), batch=False, claim_timing="start-of-turn",
                      series_games=2)
    _check_over(client, done.match_id, done.final)
    assert done.final.game_number == 2


def test_asyncio_client_plays_concurrent_matches(service: LocalService) -> None:
    async def main() -> list[str]:
        async with AsyncClient(service.address) as client:
            done = await asyncio.gather(*(aplay_local(client, random.Random(i), ruleset=r)
                                          for i, r in enumerate(["standard", "basic", "deck52",
                                                                 "standard"])))
            for match in done:
                assert is_finished(match.final)
                assert (await client.record(match.match_id)).complete
            return [m.match_id for m in done]

    assert len(set(asyncio.run(main()))) == 4


def test_open_match_by_invite_code_played_by_two_clients(service: LocalService) -> None:
    rng = random.Random(7)
    with Client(service.address) as host, Client(service.address) as friend:
        created = host.create(opponent="open", name="host", private=False, seat="first")
        assert created.invite_code and created.other is None
        assert created.match_id in {m.match_id for m in friend.list_open().matches}
        with pytest.raises(errors.IllegalAction) as waiting:
            host.seat(created.seat).act("pass")
        assert waiting.value.reason == "waiting"
        joined = friend.join(invite_code=created.invite_code, name="friend")
        assert joined.match_id == created.match_id and joined.seat == types_pb2.SEAT_SECOND
        seats = [host.seat(created.seat), friend.seat(joined)]
        for _ in range(2000):
            views = [seat.view() for seat in seats]
            if is_finished(views[0]):
                break
            mover = next(i for i, v in enumerate(views) if is_my_turn(v))
            seats[mover].act(*choose(views[mover], rng))
        assert is_finished(seats[0].view()) and is_finished(seats[1].view())
        with pytest.raises(errors.IllegalAction) as full:
            friend.join(match_id=created.match_id)
        assert full.value.reason == "match-full"


def test_act_retries_once_on_a_stale_version_when_still_legal(client: Client) -> None:
    created = client.create(opponent="local", clock="none")
    first = client.seat(created.seat)
    old = first.view()
    play = next(a for a in old.legal_actions if a.startswith("play ") and "@" in a)
    first.act(play)  # the match moves on: version + 1, now at the draw step
    first.last_view = old  # as if decided on the old view
    response = first.act("draw troop")  # ABORTED, refetched, still legal: sent again
    assert response.version == old.version + 2
    first.last_view = old
    with pytest.raises(errors.StaleVersion) as stale:  # the card is no longer in hand
        first.act(play)
    assert stale.value.reason == "stale-version"


def test_refusals_map_to_typed_errors(client: Client) -> None:
    created = client.create(opponent="local", clock="none")
    assert created.other is not None
    first, second = client.seat(created.seat), client.seat(created.other)
    cases: list[tuple[type[errors.BattleLineError], str, object]] = [
        (errors.NotFound, "match-not-found", lambda: client.view("no-such-match")),
        (errors.InvalidRequest, "bad-match-id", lambda: client.view("bad id!")),
        (errors.InvalidRequest, "malformed", lambda: first.act("play Z99@1")),
        (errors.IllegalAction, "wrong-phase", lambda: first.act("draw troop")),
        (errors.NotYourTurn, "not-your-turn", lambda: second.act("pass")),
        (errors.Unauthenticated, "unknown-token",
         lambda: client.view(created.match_id, "not-a-token")),
        (errors.InvalidRequest, "seed-refused", lambda: client.create(opponent="open", seed=1)),
        (errors.InvalidRequest, "bad-ruleset", lambda: client.create(ruleset="chess")),
        (errors.NotFound, "invite-not-found", lambda: client.join(invite_code="nope")),
    ]
    other = client.create(opponent="local", clock="none")
    cases.append((errors.PermissionDenied, "other-match",
                  lambda: client.view(other.match_id, created.seat.token)))
    for cls, reason, call in cases:
        with pytest.raises(cls) as caught:
            call()  # type: ignore[operator]
        assert caught.value.reason == reason, (cls, caught.value)
        assert isinstance(caught.value, errors.BattleLineError)
    assert isinstance(errors.NotYourTurn("x"), errors.PermissionDenied)


def test_hosted_ai_seat_cannot_be_taken_without_the_ticket(client: Client) -> None:
    created = client.create(opponent="ai", ai_level=3)
    assert client.view(created.match_id).phase == types_pb2.MATCH_PHASE_WAITING
    with pytest.raises(errors.PermissionDenied) as caught:
        client.join(match_id=created.match_id)
    assert caught.value.reason == "seat-reserved"


def test_rate_limit_is_rate_limited_with_retry_after(redis_url: str) -> None:
    strict = EngineConfig(create_rate=Rate(per_s=0.01, burst=1))
    with LocalService(redis_url, config=strict) as service, Client(service.address) as client:
        client.create(opponent="local")
        with pytest.raises(errors.RateLimited) as caught:
            client.create(opponent="local")
        assert caught.value.reason == "rate-limited"
        assert caught.value.retry_after is not None and caught.value.retry_after > 1


def test_asyncio_errors_are_typed_too(service: LocalService) -> None:
    async def main() -> None:
        async with AsyncClient(service.address) as client:
            with pytest.raises(errors.NotFound):
                await client.view("no-such-match")
            created = await client.create(opponent="local", clock="none")
            with pytest.raises(errors.IllegalAction):
                await client.seat(created.seat).act("draw troop")

    asyncio.run(main())


def test_a_short_rate_limit_is_waited_out_and_a_long_one_raised(redis_url: str) -> None:
    """A script playing quickly (the browser tests' own set-up did) slows to the
    server's rate instead of failing: a `rate-limited` refusal asking at most a second
    is waited out and the call sent again (a longer one raises RateLimited: above)."""
    codes: list[grpc.StatusCode] = []
    strict = EngineConfig(call_rate=Rate(per_s=20, burst=2))
    with (LocalService(redis_url, config=strict) as service,
          Client(service.address, observer=lambda _n, _s, code: codes.append(code)) as client):
        created = client.create(opponent="local")
        views = [client.view(created.match_id, created.seat.token) for _ in range(5)]
    assert len(views) == 5
    assert grpc.StatusCode.RESOURCE_EXHAUSTED in codes  # refused, then waited out
    assert codes[-1] == grpc.StatusCode.OK


def test_callers_sharing_a_rate_all_wait_it_out(redis_url: str) -> None:
    """A client walkthrough: `examples/asyncio_play.py --matches 5` failed `rate-limited`
    (retry in 8 ms) on a default serve: coroutines sharing one client's rate lost the
    next token five times running, and each wait counted as one of four resends. Short
    rate waits are now limited by the time they take (`common.RATE_WAITS_S`), not their
    number."""
    strict = EngineConfig(call_rate=Rate(per_s=20, burst=2))

    async def main(address: str) -> int:
        async with AsyncClient(address) as client:
            created = await client.create(opponent="local", clock="none")

            async def views() -> int:
                for _ in range(6):
                    await client.view(created.match_id, created.seat.token)
                return 6
            return sum(await asyncio.gather(*(views() for _ in range(8))))

    with LocalService(redis_url, config=strict) as service:
        assert asyncio.run(main(service.address)) == 48


def test_only_waits_that_can_heal_are_waited() -> None:
    """UNAVAILABLE is resent a few times, but not `no-ai-service` (the engine runs no AI:
    no wait heals it); a rate's short waits while the call is young. Audit of the fix: a
    hostile server refusing `rate-limited` with no delay, or answering slowly, held a
    call forever (the budget counted the waits, not the time)."""
    def refusal(code: grpc.StatusCode, reason: str, retry_after: float | None = None
                ) -> errors.BattleLineError:
        return errors.BattleLineError("refused", code=code, reason=reason,
                                      retry_after=retry_after)

    now = [0.0]
    retries = common.Retries(clock=lambda: now[0])
    assert retries.wait(refusal(grpc.StatusCode.UNAVAILABLE, "no-ai-service")) is None
    for _ in range(common.UNARY_RETRIES):
        wait = retries.wait(refusal(grpc.StatusCode.UNAVAILABLE, "storage-unavailable"))
        assert wait is not None and wait >= common.MIN_WAIT_S
    assert retries.wait(refusal(grpc.StatusCode.UNAVAILABLE, "storage-unavailable")) is None
    for asked, answer_s in ((0.0, 0.0), (0.5, 0.0), (0.01, 1.0), (0.01, 9.9)):
        now[0] = 0.0
        retries = common.Retries(clock=lambda: now[0])
        sendings = 1
        while (wait := retries.wait(refusal(grpc.StatusCode.RESOURCE_EXHAUSTED,
                                             "rate-limited", asked))) is not None:
            assert max(common.MIN_WAIT_S, asked) <= wait <= 1.5 * max(common.MIN_WAIT_S, asked)
            now[0] += wait + answer_s
            sendings += 1
        assert now[0] <= common.RATE_WAITS_S + answer_s, (asked, answer_s, now[0])
        assert sendings <= common.RATE_WAITS_S / common.MIN_WAIT_S + 1
    slow = refusal(grpc.StatusCode.RESOURCE_EXHAUSTED, "rate-limited", 5.0)
    assert common.Retries().wait(slow) is None  # longer than a second: raised at once


def test_answer_and_turn_times_read_a_records_commit_times() -> None:
    """An answer ends at the seat's first action after the other seat's; a turn at its
    last (its draw): the hosted AI's load figures report both."""
    record = record_pb2.GetRecordResponse()
    for seat, at in ((1, 0.0), (1, 0.5), (0, 2.0), (0, 2.25), (1, 3.0), (0, 4.0)):
        event = record.events.add(seat=seat)
        event.commit_time.FromNanoseconds(int(at * 1e9))
    assert answer_times(record, 0) == [1.5, 1.0]
    assert turn_times(record, 0) == [1.75, 1.0]
    assert answer_times(record, 1) == [0.75]


@pytest.mark.parametrize(("target", "need_port", "ok"), [
    ("127.0.0.1:50051", False, True), ("[::1]:50051", True, True),
    ("unix:/tmp/engine.sock", True, True), ("dns:///engine.example:443", True, True),
    ("engine.example", False, True),  # gRPC's port 443, for a TLS channel
    ("engine.example", True, False), ("127.0.0.1:112737", False, False),
    ("127.0.0.1:0", False, False), ("127.0.0.1:", False, False), ("[::1]:65536", False, False),
    ("localhost:", False, False), ("ipv4:1.2.3.4:99999", False, False),
    ("dns:///engine.example:99999", False, False), ("127.0.0.1:" + "9" * 5000, False, False),
    ("ipv4:127.0.0.1:50051,127.0.0.2:50052", True, True), ("ipv6:[::1]:50051", True, True),
    ("dns://8.8.8.8/engine.example:50051", True, True), ("unix-abstract:engine", True, True),
    ("engine-1.svc_local:50051", True, True),
])
def test_a_target_is_checked_before_a_channel_is_made(target: str, need_port: bool,
                                                       ok: bool) -> None:
    """gRPC takes port 112737 as 47201 and HOST alone as port 443: the library refuses a
    port out of range, and the commands a target with no port."""
    if ok:
        assert checked_target(target, need_port=need_port) == target
    else:
        with pytest.raises(ValueError, match="give HOST:PORT"):
            checked_target(target, need_port=need_port)
    if not need_port and not ok:
        with pytest.raises(ValueError):
            Client(target)
