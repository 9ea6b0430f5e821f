"""Rejections: only documented status codes with rich details, and nothing changes.
Also rate limits, the bound on streams per seat, and clocks that run out."""

from __future__ import annotations

import random
import re
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
import redis
from google.protobuf import duration_pb2
from google.rpc import error_details_pb2
from grpc_status import rpc_status
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from battleline.v1 import game_pb2, lobby_pb2, types_pb2, watch_pb2
from battleline_engine.matches import Matches
from battleline_engine.model import Status
from battleline_engine.ratelimit import Rate
from battleline_engine.runtime import EngineConfig
from battleline_engine.status import DOCUMENTED
from battleline_rules import ErrorCode

from .harness import AI_KEY, OPEN_LIMITS, SEATS, Client, Engine, auth, choose

# Cases the property tests below tried in this run, printed at the end of the module
# (the figures the README quotes).
TRIED: Counter[str] = Counter()


@pytest.fixture(scope="module")
def shared(redis_server: str) -> Iterator[Engine]:
    running = Engine(redis_server)
    yield running
    running.close()
    print(f"\nfuzz: {dict(TRIED)}, each answered with a documented code")


def details(err: grpc.RpcError) -> dict[str, object]:
    status = rpc_status.from_call(err)  # type: ignore[arg-type]
    assert status is not None, "every rejection carries a google.rpc.Status"
    out: dict[str, object] = {}
    for any_ in status.details:
        for kind in (error_details_pb2.ErrorInfo, error_details_pb2.RetryInfo):
            if any_.Is(kind.DESCRIPTOR):
                msg = kind()
                any_.Unpack(msg)
                out[kind.__name__] = msg
    return out


def reason(err: grpc.RpcError) -> str:
    """The ErrorInfo reason of a rejection."""
    return details(err)["ErrorInfo"].reason  # type: ignore[attr-defined, no-any-return]


card = st.sampled_from(["R7", "B10", "HQ", "S2", "FOG", "SCOUT", "X9", "R0", "?troop", ""])
flag = st.sampled_from(["1", "3", "9", "10", "0", "-1", "x", ""])
action_text = st.one_of(
    st.builds(lambda c, f: f"play {c}@{f}", card, flag),
    st.builds(lambda c: f"play {c}", card),
    st.builds(lambda f: f"claim {f}", flag),
    st.sampled_from(["draw troop", "draw tactic", "draw", "pass", "end", "scout-draw troop",
                     "scout-return R3", "mud-discard R4@6", "redeploy R7@3 5",
                     "deserter B4@2", "traitor B4@2 6", "resign", "", "play", "PLAY R7@1"]),
    st.text(max_size=80),
)


@settings(max_examples=150, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate],
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_bad_requests_get_documented_codes_and_change_nothing(
        shared: Engine, data: st.DataObject) -> None:
    TRIED["bad game requests"] += 1
    client = Client.to(shared.address)
    try:
        created = client.create("standard", seed=data.draw(st.integers(0, 3), "seed"))
        other = client.create("deck52")
        tokens = (created.seat_token, created.other_seat_token)
        before = [client.view(created.match_id, t) for t in tokens]
        to_act = SEATS.index(before[0].current_seat)
        legal = set(before[to_act].legal_actions)
        match_id = data.draw(st.one_of(
            st.just(created.match_id), st.just(other.match_id), st.just("nope"),
            st.text(max_size=70)), "match_id")
        token = data.draw(st.sampled_from(
            [tokens[to_act], tokens[1 - to_act], other.seat_token, None, "garbage",
             created.match_id + ".forged"]), "token")
        actions = data.draw(st.lists(action_text, max_size=4), "actions")
        version = data.draw(st.sampled_from([before[0].version, before[0].version + 1, 0]))
        action_id = data.draw(st.sampled_from(["a1", "", "x" * 65, "ok\n"]), "action_id")
        if (match_id == created.match_id and token == tokens[to_act] and actions
                and len(actions) == 1 and actions[0] in legal):
            actions = ["pass"]  # never legal at the start: every card can be placed
        request = game_pb2.SubmitActionRequest(match_id=match_id, expected_version=version,
                                               action_id=action_id, actions=actions)
        rpc = data.draw(st.sampled_from(["submit", "resign_other", "view", "watch"]), "rpc")
        try:
            if rpc == "submit":
                client.game.SubmitAction(request, metadata=auth(token), timeout=10)
                pytest.fail("an illegal request was accepted")
            elif rpc == "resign_other":
                client.game.Resign(game_pb2.ResignRequest(match_id=match_id, action_id="r"),
                                   metadata=auth(other.seat_token), timeout=10)
                if match_id == other.match_id:  # resigning one's own match is fine
                    return
                pytest.fail("resigned another match")
            elif rpc == "view":
                client.game.GetView(game_pb2.GetViewRequest(match_id=match_id),
                                    metadata=auth(token), timeout=10)
                return
            else:
                stream = client.watcher.Watch(watch_pb2.WatchRequest(
                    match_id=match_id, resume_after=data.draw(st.integers(0, 10))),
                    metadata=auth(token), timeout=1)
                next(iter(stream))
                stream.cancel()
                return
        except grpc.RpcError as err:
            if rpc == "watch" and err.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                return  # resumed at the last event: the stream waits for the next one
            assert err.code() in DOCUMENTED, (err.code(), err.details())
            info = details(err).get("ErrorInfo")
            assert info is not None and info.domain == "battleline.v1"  # type: ignore[attr-defined]
            assert err.details()
        after = [client.view(created.match_id, t) for t in tokens]
        for view in (*before, *after):
            view.ClearField("clocks")  # time passes; nothing else may change
        assert after == before
    finally:
        client.channel.close()


def test_token_errors_are_precise(shared: Engine) -> None:
    client = Client.to(shared.address)
    a, b = client.create("basic"), client.create("basic")
    view = client.view(a.match_id, a.seat_token)
    cases = [(None, grpc.StatusCode.UNAUTHENTICATED), ("junk", grpc.StatusCode.UNAUTHENTICATED),
             (b.seat_token, grpc.StatusCode.PERMISSION_DENIED),
             (a.other_seat_token, grpc.StatusCode.PERMISSION_DENIED)]
    for token, code in cases:
        with pytest.raises(grpc.RpcError) as err:
            client.game.SubmitAction(game_pb2.SubmitActionRequest(
                match_id=a.match_id, expected_version=view.version, action_id="t",
                actions=[view.legal_actions[0]]), metadata=auth(token), timeout=5)
        assert err.value.code() == code, (token, err.value.details())
    with pytest.raises(grpc.RpcError) as stale:
        client.submit(a.match_id, a.seat_token, view.version - 1, [view.legal_actions[0]])
    assert stale.value.code() == grpc.StatusCode.ABORTED
    with pytest.raises(grpc.RpcError) as illegal:
        client.submit(a.match_id, a.seat_token, view.version, ["claim 4"])
    assert illegal.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "claims are made after playing" in (illegal.value.details() or "")
    assert details(illegal.value)["ErrorInfo"].reason == "wrong-phase"  # type: ignore[attr-defined]


def test_a_full_store_refuses_writes_precisely_and_changes_nothing(
        shared: Engine, redis_server: str) -> None:
    """deploy/ gives Redis a `maxmemory` with noeviction (seventeenth audit: without one,
    Redis grew until its container was killed). Full, it refuses every write: a client
    gets RESOURCE_EXHAUSTED `storage-full` with a time to retry, reads still work, and the
    refused action is applied once room is made."""
    client = Client.to(shared.address)
    store = redis.Redis.from_url(redis_server)
    created = client.create("standard")
    view = client.view(created.match_id, created.seat_token)
    to_act = (created.seat_token, created.other_seat_token)[SEATS.index(view.current_seat)]
    view = client.view(created.match_id, to_act)
    move = [view.legal_actions[0]]
    try:
        store.config_set("maxmemory", 1)  # below what is used: every write is refused
        for attempt in (lambda: client.submit(created.match_id, to_act, view.version, move),
                        lambda: client.create("standard")):
            with pytest.raises(grpc.RpcError) as full:
                attempt()
            assert full.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert reason(full.value) == "storage-full"
            retry = details(full.value)["RetryInfo"]
            assert retry.retry_delay.ToSeconds() >= 1  # type: ignore[attr-defined]
        after = client.view(created.match_id, to_act)
        for seen in (after, view):
            seen.ClearField("clocks")  # time passes; nothing else may change
        assert after == view
        # Reads go on: a resumed Watch replays the events (it went through a MULTI, which a
        # full Redis refuses: the eighteenth audit saw it answered storage-full).
        resumed = client.watch(created.match_id, to_act, resume_after=0)
        assert next(iter(resumed)).event.number == 1
        resumed.cancel()
    finally:
        store.config_set("maxmemory", 0)
        store.close()
    client.submit(created.match_id, to_act, view.version, move)
    assert client.view(created.match_id, to_act).version > view.version
    client.channel.close()


def test_a_store_that_cannot_save_refuses_writes_as_unavailable(
        shared: Engine, redis_server: str) -> None:
    """A Redis whose last save failed (its disk full) refuses writes with MISCONF, a
    replica after a failover with READONLY: the store cannot take writes now, a reason
    and a retry, where the eighteenth audit saw INTERNAL and a traceback for each call."""
    client = Client.to(shared.address)
    store = redis.Redis.from_url(redis_server)
    saved_dir, saves = store.config_get("dir")["dir"], store.config_get("save")["save"]
    try:
        store.config_set("save", "3600 1")  # with a save point, a failed save stops writes
        store.config_set("dir", "/proc")  # nothing can be written there: the save fails
        store.bgsave()
        deadline = time.monotonic() + 10
        while store.info("persistence")["rdb_last_bgsave_status"] != "err":
            assert time.monotonic() < deadline, "the save did not fail"
            time.sleep(0.05)
        with pytest.raises(grpc.RpcError) as refused:
            client.create("standard")
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
        assert reason(refused.value) == "storage-unavailable"
    finally:
        store.config_set("dir", saved_dir)
        store.config_set("save", saves)
        store.bgsave()
        deadline = time.monotonic() + 10
        while store.info("persistence")["rdb_last_bgsave_status"] != "ok" \
                and time.monotonic() < deadline:
            time.sleep(0.05)
        store.close()
    client.create("standard")  # saved again: writes are taken
    client.channel.close()


def test_rate_limits_say_when_to_retry(redis_url: str) -> None:
    config = EngineConfig(create_rate=Rate(1, 3), action_rate=Rate(1, 2), streams_per_seat=2)
    engine = Engine(redis_url, config)
    try:
        client = Client.to(engine.address)
        created = [client.create("standard") for _ in range(3)]
        with pytest.raises(grpc.RpcError) as err:
            client.create("standard")
        assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        retry = details(err.value)["RetryInfo"]
        assert retry.retry_delay.ToNanoseconds() > 0  # type: ignore[attr-defined]
        m = created[0]
        streams = [client.watch(m.match_id, m.seat_token) for _ in range(2)]
        for s in streams:
            next(iter(s))
        with pytest.raises(grpc.RpcError) as too_many:
            next(iter(client.watch(m.match_id, m.seat_token)))
        assert too_many.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        for s in streams:
            s.cancel()
        codes = []
        for _ in range(4):
            view = client.view(m.match_id, m.seat_token)
            try:
                client.submit(m.match_id, m.seat_token, view.version, ["pass"])  # refused
                codes.append("OK")
            except grpc.RpcError as e:
                codes.append(e.code().name)
        assert "RESOURCE_EXHAUSTED" in codes
    finally:
        engine.close()


def test_a_clock_that_runs_out_loses_and_is_announced(shared: Engine) -> None:
    client = Client.to(shared.address)
    limit = duration_pb2.Duration(seconds=1)
    created = client.create("standard", time_control=types_pb2.TimeControl(
        kind=types_pb2.TIME_CONTROL_KIND_PER_MOVE, limit=limit))
    tokens = (created.seat_token, created.other_seat_token)
    view = client.view(created.match_id, tokens[0])
    assert view.clocks[0].running and view.clocks[0].remaining.ToMilliseconds() <= 1000
    client.submit(created.match_id, tokens[0], view.version,
                  [next(a for a in view.legal_actions if a.startswith("play")), "draw troop"])
    events: list[types_pb2.MatchEvent] = []
    reader = threading.Thread(target=lambda: events.extend(
        i.event for i in client.watch(created.match_id) if i.HasField("event")))
    reader.start()
    reader.join(10)  # nobody calls: the sweeper must end it
    assert not reader.is_alive()
    assert [e.kind for e in events][-2:] == [types_pb2.EVENT_KIND_TIMEOUT,
                                            types_pb2.EVENT_KIND_GAME_OVER]
    final = client.view(created.match_id, tokens[0])
    assert final.winner == types_pb2.SEAT_FIRST and final.end_reason == types_pb2.END_REASON_TIMEOUT


def test_per_game_clock_charges_only_the_mover(shared: Engine) -> None:
    client = Client.to(shared.address)
    created = client.create("basic", time_control=types_pb2.TimeControl(
        kind=types_pb2.TIME_CONTROL_KIND_PER_GAME, limit=duration_pb2.Duration(seconds=60)))
    view = client.view(created.match_id, created.seat_token)
    time.sleep(0.3)
    response = client.submit(created.match_id, created.seat_token, view.version,
                             [next(a for a in view.legal_actions if a.startswith("play")),
                              "draw troop"])
    first, second = response.view.clocks
    assert not first.running and 59_000 < first.remaining.ToMilliseconds() <= 59_700
    assert second.running and second.remaining.ToMilliseconds() > 59_500


def test_each_game_of_a_series_starts_with_full_per_game_clocks(shared: Engine) -> None:
    """A per-game budget is for one game: game 2 of a series starts with every seat's
    budget full, however long either seat took in game 1."""
    client = Client.to(shared.address)
    created = client.create("basic", series_games=2, time_control=types_pb2.TimeControl(
        kind=types_pb2.TIME_CONTROL_KIND_PER_GAME, limit=duration_pb2.Duration(seconds=60)))
    tokens = (created.seat_token, created.other_seat_token)
    rng = random.Random(5)
    view = client.view(created.match_id, tokens[0])
    time.sleep(0.5)  # the first seat's game-1 clock loses half a second
    while view.game_number == 1:
        seat = SEATS.index(view.current_seat)
        view = client.view(created.match_id, tokens[seat])
        view = client.submit(created.match_id, tokens[seat], view.version,
                             choose(view, rng, True)).view
    assert view.game_number == 2 and view.phase == types_pb2.MATCH_PHASE_PLAYING
    for clock in view.clocks:
        left = clock.remaining.ToMilliseconds()
        assert left == 60_000 or (clock.running and left > 59_500), view.clocks


def test_lobby_rejects_bad_options(shared: Engine) -> None:
    client = Client.to(shared.address)
    bad = [dict(ruleset="chess"), dict(ruleset="standard", hand_size=9),
           dict(ruleset="standard", series_games=99)]
    for options in bad:
        with pytest.raises(grpc.RpcError) as err:
            client.lobby.CreateMatch(lobby_pb2.CreateMatchRequest(
                options=types_pb2.MatchOptions(**options),
                opponent=types_pb2.Opponent(kind=types_pb2.OPPONENT_KIND_LOCAL)))
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    with pytest.raises(grpc.RpcError) as err:
        client.lobby.CreateMatch(lobby_pb2.CreateMatchRequest(
            options=types_pb2.MatchOptions(ruleset="basic")))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    for nanos in (2**31 - 1, -1):  # not a valid Duration, whatever it would round to
        with pytest.raises(grpc.RpcError) as err:
            client.create("basic", time_control=types_pb2.TimeControl(
                kind=types_pb2.TIME_CONTROL_KIND_PER_MOVE,
                limit=duration_pb2.Duration(seconds=60, nanos=nanos)))
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "nanos" in err.value.details()
    # A nanosecond past 24 h, or short of 1 s, is out of range too (the thirty-second
    # audit: 24 h and 1 ns was stored as 24 h).
    for seconds, nanos in ((86_400, 1), (0, 999_999_999)):
        with pytest.raises(grpc.RpcError) as err:
            client.create("basic", time_control=types_pb2.TimeControl(
                kind=types_pb2.TIME_CONTROL_KIND_PER_MOVE,
                limit=duration_pb2.Duration(seconds=seconds, nanos=nanos)))
        assert reason(err.value) == "bad-clock", (seconds, nanos)
    assert OPEN_LIMITS.action_rate.per_s > 100


def test_a_name_with_a_letter_drawn_blank_is_refused(shared: Engine) -> None:
    """Fourteenth audit: "You" and a Hangul filler (a letter, printable, drawn as nothing)
    passed as a name and read as "You" on the other player's screen."""
    client = Client.to(shared.address)
    for name in ("You\u3164", "You\u3164\u3164", "Yo\u115fu", "\u2800", "A\uffa0"):
        with pytest.raises(grpc.RpcError) as err:
            client.create("basic", seat_options=types_pb2.SeatOptions(display_name=name))
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT, name
        assert reason(err.value) == "bad-name" and "U+3164" in err.value.details()
    created = client.create("basic", seat_options=types_pb2.SeatOptions(display_name="Yun"))
    assert created.match_id


def test_a_name_that_reads_as_the_hosted_ais_is_refused(shared: Engine) -> None:
    """Thirtieth audit: a player named "AI level 5" (or in full-width letters) passed for
    the hosted AI on the other player's and the spectators' screens; its re-test passed
    a variation selector, look-alike letters (Cyrillic, Greek, Cherokee, IPA), `Al` for
    `AI`, `level5` and leading punctuation; small capitals (`ᴀɪ ʟᴇᴠᴇʟ`) passed its mend,
    and the thirty-first audit passed a capital small capital I, an epigraphic I longa,
    `AI lvl 5` and `AI 5`, and its re-test `AI 1`, a Hangul dot in front, a vertical bar
    for the I and negative squared letters (the full lists: tests/client/test_look_alike.py)."""
    client = Client.to(shared.address)
    for name in ("AI level 5", "ai LEVEL 3", "\uff21\uff29 level 5", "AI  level", "AIlevel 9",
                 "\U0001d400\U0001d408 level 5", "A\ufe0fI level 5", "\u0410\u0406 level 5",
                 "\u0391\u0399 level 5", "\u13aa\u0406 level 5", "\u0251\u026a level 5",
                 "Al level 5", "AI level5", "[AI level 5]", "AI \u04c0evel 5", "A.I. level 1",
                 "\u1d00\u026a \u029f\u1d07\u1d20\u1d07\u029f 5", "A\ua7ae level 5",
                 "A\ua7fe level 5", "AI lvl 5", "AI 5", "AI-5", "AI 1", "\u318dAI level 5",
                 "A\u2758 level 5", "\U0001f170\U0001f178 level 5"):
        with pytest.raises(grpc.RpcError) as err:
            client.create("basic", seat_options=types_pb2.SeatOptions(display_name=name))
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT, name
        assert reason(err.value) == "reserved-name" and "hosted AI" in err.value.details()
    for name in ("Aila", "AI fan", "Level 5 AI", "Kai levels", "Mr AI level 5", "Aileen", "Aivi",
                 "Ali", "Alivia",
                 "Jos\u00e9", "\u674e\u5c0f\u9f8d", "\u00c5sa"):
        assert client.create("basic", seat_options=types_pb2.SeatOptions(
            display_name=name)).match_id, name


def test_hosted_ai_seat_is_taken_with_the_ai_key_only(shared: Engine) -> None:
    """Only the AI's key takes the AI's seat, and it is then that seat's credential (no
    token is issued); the key again gets the same seat (a worker taking over needs
    nothing stored). The request stream and the match keep no credential; a join ticket
    is refused; the key takes no other seat."""
    client = Client.to(shared.address)
    key = auth(AI_KEY)
    created = client.lobby.CreateMatch(lobby_pb2.CreateMatchRequest(
        options=types_pb2.MatchOptions(ruleset="standard"), seat=types_pb2.SEAT_CHOICE_FIRST,
        opponent=types_pb2.Opponent(kind=types_pb2.OPPONENT_KIND_AI, ai_level=3)))
    requests = shared.call(shared.storage.redis.xrange("bl:ai:requests"))
    entry = {k.decode(): v.decode() for k, v in requests[-1][1].items()}
    # The owner (the creator's limiter key) shares the AI's search processes fairly.
    assert entry == {"match": created.match_id, "seat": "1", "level": "3", "owner": "loopback"}
    for refused_with in ({}, {"join_ticket": "anything"}):
        with pytest.raises(grpc.RpcError) as err:  # a stranger cannot take the AI's seat
            client.lobby.JoinMatch(lobby_pb2.JoinMatchRequest(match_id=created.match_id,
                                                              **refused_with))
        assert err.value.code() in (grpc.StatusCode.PERMISSION_DENIED,
                                    grpc.StatusCode.INVALID_ARGUMENT)
    joined = client.lobby.JoinMatch(lobby_pb2.JoinMatchRequest(match_id=created.match_id),
                                    metadata=key)
    assert joined.seat == types_pb2.SEAT_SECOND and joined.seat_token == ""
    view = client.view(created.match_id, AI_KEY)
    assert view.viewer == types_pb2.SEAT_SECOND and view.players[1].display_name == "AI level 3"
    # The engine marks the AI's seat in every view (a name is only a player's word).
    assert [p.hosted_ai for p in view.players] == [False, True]
    assert [p.hosted_ai for p in client.view(created.match_id, None).players] == [False, True]
    again = client.lobby.JoinMatch(lobby_pb2.JoinMatchRequest(match_id=created.match_id),
                                   metadata=key)
    assert again.seat == joined.seat
    assert client.view(created.match_id, AI_KEY).version == view.version  # no 2nd join
    stored = shared.call(shared.storage.redis.hgetall(f"bl:{{{created.match_id}}}:seats"))
    assert AI_KEY.encode() not in b"".join([*stored, *stored.values()])
    local = client.create()
    with pytest.raises(grpc.RpcError) as other:
        client.view(local.match_id, AI_KEY)
    assert other.value.code() == grpc.StatusCode.PERMISSION_DENIED


def test_no_seed_where_the_other_seat_is_not_the_creators(shared: Engine) -> None:
    """Whoever knows the seed knows the deck: LOCAL only (both seats are the caller's)."""
    client = Client.to(shared.address)
    assert client.create(seed=4).match_id
    for kind in (types_pb2.OPPONENT_KIND_AI, types_pb2.OPPONENT_KIND_OPEN):
        with pytest.raises(grpc.RpcError) as err:
            client.lobby.CreateMatch(lobby_pb2.CreateMatchRequest(
                options=types_pb2.MatchOptions(ruleset="standard"), seed=4,
                opponent=types_pb2.Opponent(kind=kind, ai_level=3)))
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert details(err.value)["ErrorInfo"].reason == "seed-refused"


def test_an_ai_match_is_not_private(shared: Engine) -> None:
    """Twenty-first audit: a private AI match was accepted, and the hosted AI, joining by
    match id, was refused invite-required: the match waited out the AI's time to join."""
    client = Client.to(shared.address)
    with pytest.raises(grpc.RpcError) as err:
        client.lobby.CreateMatch(lobby_pb2.CreateMatchRequest(
            options=types_pb2.MatchOptions(ruleset="standard"),
            opponent=types_pb2.Opponent(kind=types_pb2.OPPONENT_KIND_AI, ai_level=3,
                                        private=True)))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert reason(err.value) == "bad-opponent" and "OPEN" in err.value.details()
    assert client.lobby.CreateMatch(lobby_pb2.CreateMatchRequest(
        options=types_pb2.MatchOptions(ruleset="standard"),
        opponent=types_pb2.Opponent(kind=types_pb2.OPPONENT_KIND_OPEN, private=True))).invite_code


@settings(max_examples=150, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate],
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_lobby_requests_get_documented_codes(shared: Engine, data: st.DataObject) -> None:
    TRIED["lobby requests"] += 1
    client = Client.to(shared.address)
    small = st.integers(-1, 12)
    try:
        kind = data.draw(st.sampled_from(["create", "join", "list"]), "rpc")
        if kind == "create":
            request = lobby_pb2.CreateMatchRequest(
                options=types_pb2.MatchOptions(
                    ruleset=data.draw(st.sampled_from(["standard", "basic", "deck52", "", "x"])),
                    claim_timing=data.draw(small.map(abs)),
                    hand_size=data.draw(st.sampled_from([0, 6, 7, 9])),
                    series_games=data.draw(st.sampled_from([0, 1, 3, 10, 1000])),
                    time_control=types_pb2.TimeControl(
                        kind=data.draw(small.map(abs)),
                        limit=duration_pb2.Duration(seconds=data.draw(st.sampled_from(
                            [0, 1, 60, 10**6])))),
                ),
                seat=data.draw(small.map(abs)),
                opponent=types_pb2.Opponent(kind=data.draw(small.map(abs)),
                                            ai_level=data.draw(small.map(abs))),
                seat_options=types_pb2.SeatOptions(
                    display_name=data.draw(st.text(max_size=50)),
                    auto_claim=data.draw(st.booleans())),
            )
            if data.draw(st.booleans()):
                request.seed = data.draw(st.integers(0, 2**64 - 1))
            client.lobby.CreateMatch(request, timeout=10)
        elif kind == "join":
            target = data.draw(st.text(max_size=80))
            if data.draw(st.booleans()):
                request = lobby_pb2.JoinMatchRequest(match_id=target)
            else:
                request = lobby_pb2.JoinMatchRequest(invite_code=target)
            request.join_ticket = data.draw(st.text(max_size=40))
            client.lobby.JoinMatch(request, timeout=10)
        else:
            client.lobby.ListOpenMatches(lobby_pb2.ListOpenMatchesRequest(
                ruleset=data.draw(st.sampled_from(["", "basic", "x"])),
                page_size=data.draw(st.integers(0, 10_000)),
                page_token=data.draw(st.text(max_size=30))), timeout=10)
    except grpc.RpcError as err:
        assert err.code() in DOCUMENTED, (err.code(), err.details())
        assert details(err).get("ErrorInfo") is not None
    finally:
        client.channel.close()


def _table_codes(path: Path) -> set[str]:
    """Status codes named in the first column of a markdown table (`| `CODE` | ...`)."""
    return set(re.findall(r"^\| `([A-Z_]+)` \|", path.read_text(), re.MULTILINE))


_REFUSAL = re.compile(r'(?:invalid|precondition|Refusal\(Kind\.[A-Z_]+,)\s*\(?\s*"([a-z-]+)"')


def test_every_reason_the_engine_gives_is_documented() -> None:
    """A client developer found `hints-off`, `match-not-over` and others in no status
    table: every reason an engine refusal names in its source is in both tables'
    documents, with the rules core's codes."""
    root = Path(__file__).resolve().parents[2]
    engine = root / "services" / "engine" / "battleline_engine"
    reasons = {m for path in engine.rglob("*.py") for m in _REFUSAL.findall(path.read_text())}
    reasons |= {code.value for code in ErrorCode}
    assert {"action-id-reused", "hints-off", "stale-version", "wrong-phase"} <= reasons
    for doc in ("API.md", "client-guide.md"):
        text = (root / "docs" / doc).read_text()
        missing = sorted(r for r in reasons if f"`{r}`" not in text)
        assert not missing, (doc, missing)


def test_the_documented_codes_are_the_ones_returned() -> None:
    """docs/API.md, the client guide and the client library name exactly DOCUMENTED: a
    code listed but never returned (ALREADY_EXISTS was) misleads client authors."""
    root = Path(__file__).resolve().parents[2]
    documented = {c.name for c in DOCUMENTED}
    assert _table_codes(root / "docs" / "API.md") == documented
    guide = root / "docs" / "client-guide.md"
    assert _table_codes(guide) == documented
    named = set(re.findall(r"`([A-Z][A-Z_]{4,})`", guide.read_text()))
    grpc_codes = {c.name for c in grpc.StatusCode}
    # gRPC's own: a transport failure, a bug, or a method the port does not serve.
    transport = {"DEADLINE_EXCEEDED", "INTERNAL", "UNKNOWN", "CANCELLED", "UNIMPLEMENTED"}
    assert (named & grpc_codes) - documented <= transport
    from battleline_client import errors as client_errors

    mapped = {c.name for c in client_errors._BY_CODE}
    assert mapped - documented <= {"DEADLINE_EXCEEDED"}


def test_a_clock_two_replicas_time_out_at_once_ends_the_match_once(shared: Engine) -> None:
    """Two replicas that read a match whose clock has run out both write its timeout;
    the one that loses the race read it again instead of failing (an operator saw a
    `serve --workers 2` sweep log it as an ERROR with a traceback, its pass cut short)."""
    client = Client.to(shared.address)
    created = client.create("standard", time_control=types_pb2.TimeControl(
        kind=types_pb2.TIME_CONTROL_KIND_PER_MOVE, limit=duration_pb2.Duration(seconds=1)))
    other_replica = Matches(shared.storage)
    before = shared.call(other_replica.read(created.match_id))
    assert before.status == Status.PLAYING
    time.sleep(1.2)
    ended = client.view(created.match_id, created.seat_token)  # this replica times it out
    assert ended.end_reason == types_pb2.END_REASON_TIMEOUT
    after = shared.call(other_replica.checked(before))  # as its own read of `before` would
    assert after.status == Status.FINISHED and after.version == ended.version
    client.channel.close()
