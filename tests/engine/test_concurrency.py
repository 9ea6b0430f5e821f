"""Races, retries, several engines on one Redis, and an engine killed mid-match."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import random
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc
import pytest
import redis

from battleline.v1 import (
    game_pb2,
    game_pb2_grpc,
    lobby_pb2,
    record_pb2,
    record_pb2_grpc,
    types_pb2,
)
from battleline_engine.storage.matches import SPENT_IDS
from tests.processes import start_serve

from .harness import SEATS, Client, Engine, auth, secret_create
from .test_errors import reason


def step(client: Client, match_id: str, tokens: tuple[str, str], rng: random.Random) -> bool:
    """One random legal action of whoever is to act; False once the match is over."""
    view = client.view(match_id, tokens[0])
    if view.phase == types_pb2.MATCH_PHASE_FINISHED:
        return False
    seat = SEATS.index(view.current_seat)
    mine = client.view(match_id, tokens[seat])
    client.submit(match_id, tokens[seat], mine.version, [rng.choice(list(mine.legal_actions))])
    return True


def test_two_different_actions_raced_on_one_turn_apply_once(engine: Engine) -> None:
    clients = [Client.to(engine.address) for _ in range(2)]
    for trial in range(10):
        created = clients[0].create("standard", seed=trial)
        view = clients[0].view(created.match_id, created.seat_token)
        plays = [a for a in view.legal_actions if a.startswith("play")]
        barrier = threading.Barrier(2)

        def race(i: int, view: types_pb2.MatchView = view, plays: list[str] = plays,
                 barrier: threading.Barrier = barrier,
                 match_id: str = created.match_id, token: str = created.seat_token,
                 ) -> grpc.StatusCode:
            barrier.wait()
            try:
                clients[i].submit(match_id, token, view.version, [plays[i]], f"race-{i}")
                return grpc.StatusCode.OK
            except grpc.RpcError as err:
                return err.code()

        with ThreadPoolExecutor(2) as pool:
            codes = list(pool.map(race, [0, 1]))
        assert sorted(c.name for c in codes) == ["ABORTED", "OK"], codes
        after = clients[0].view(created.match_id, created.seat_token)
        assert after.version == view.version + 1
        assert sum(len(f.first_cards) for f in after.flags) == 1


def test_joins_raced_for_one_seat_take_it_once_and_the_rest_are_told_it_is_full(
        engine: Engine) -> None:
    """Fourteenth audit: a join that lost the race by a version (not by the seat) was
    told ABORTED stale-version ("try again"), where the seat was gone for good."""
    clients = [Client.to(engine.address) for _ in range(6)]
    for trial in range(6):
        created = clients[0].create("standard", kind=types_pb2.OPPONENT_KIND_OPEN)
        barrier = threading.Barrier(len(clients))

        def join(i: int, match_id: str = created.match_id,
                 barrier: threading.Barrier = barrier) -> str:
            barrier.wait()
            try:
                clients[i].lobby.JoinMatch(lobby_pb2.JoinMatchRequest(match_id=match_id),
                                           timeout=10)
                return "OK"
            except grpc.RpcError as err:
                return f"{err.code().name} {reason(err)}"

        with ThreadPoolExecutor(len(clients)) as pool:
            answers = sorted(pool.map(join, range(len(clients))))
        assert answers == ["FAILED_PRECONDITION match-full"] * 5 + ["OK"], (trial, answers)


SECRET = "s3cret-of-the-joiner_0123456789"  # a real client draws 32 random bytes


@pytest.mark.parametrize("private", [False, True])
def test_a_join_sent_again_with_its_secret_answers_the_same_seat(engine: Engine,
                                                                  private: bool) -> None:
    """Nineteenth audit: a join committed whose answer was lost (18 of 64 joins cut by a
    SIGKILL) could not be sent again: match-full, the seat token gone, the creator facing
    a seat nobody held. A join sent again with its secret (by id, or by the invite, which
    no longer vanishes at the join) answers the same seat and token."""
    client = Client.to(engine.address)
    created = client.lobby.CreateMatch(lobby_pb2.CreateMatchRequest(
        options=types_pb2.MatchOptions(ruleset="standard"),
        opponent=types_pb2.Opponent(kind=types_pb2.OPPONENT_KIND_OPEN, private=private)),
        timeout=10)
    target = ({"invite_code": created.invite_code} if private
              else {"match_id": created.match_id})
    first, again = (client.lobby.JoinMatch(lobby_pb2.JoinMatchRequest(
        **target, seat_secret=SECRET), timeout=10) for _ in range(2))
    assert (again.match_id, again.seat, again.seat_token) == (
        first.match_id, first.seat, first.seat_token)
    assert first.seat_token == f"{created.match_id}.{SECRET}"
    assert client.view(created.match_id, again.seat_token).viewer == first.seat
    assert client.view(created.match_id, None).version == 2  # created, then joined once
    for other in ({"seat_secret": SECRET.upper()}, {}):  # another joiner, or no secret
        with pytest.raises(grpc.RpcError) as full:
            client.lobby.JoinMatch(lobby_pb2.JoinMatchRequest(**target, **other), timeout=10)
        assert (full.value.code(), reason(full.value)) == (
            grpc.StatusCode.FAILED_PRECONDITION, "match-full")


def test_a_creator_joining_with_its_own_tokens_secret_keeps_its_seat(engine: Engine) -> None:
    """Twentieth audit: a creator that sent its own token's random part as the secret
    took the other seat under the same token, which then named that seat (a token's seat
    must never change: each engine process caches it) and left its first seat to the
    clock. The token's seat stays, and the open seat stays open."""
    client = Client.to(engine.address)
    created = client.create(kind=types_pb2.OPPONENT_KIND_OPEN)
    secret = created.seat_token.split(".", 1)[1]
    with contextlib.suppress(grpc.RpcError):  # match-full, or its own seat named again
        joined = client.lobby.JoinMatch(lobby_pb2.JoinMatchRequest(
            match_id=created.match_id, seat_secret=secret), timeout=10)
        assert joined.seat == created.seat
    view = client.view(created.match_id, created.seat_token)
    assert view.viewer == created.seat
    assert view.phase == types_pb2.MATCH_PHASE_WAITING


@pytest.mark.parametrize("secret", ["short", "x" * 65, "has space in it 0123456789",
                                    "dots.are.the.token.separator", "ünïcödé" * 4])
def test_a_seat_secret_that_is_not_one_is_refused(engine: Engine, secret: str) -> None:
    client = Client.to(engine.address)
    created = client.create(kind=types_pb2.OPPONENT_KIND_OPEN)
    with pytest.raises(grpc.RpcError) as refused:
        client.lobby.JoinMatch(lobby_pb2.JoinMatchRequest(match_id=created.match_id,
                                                          seat_secret=secret), timeout=10)
    assert (refused.value.code(), reason(refused.value)) == (
        grpc.StatusCode.INVALID_ARGUMENT, "bad-seat-secret")
    assert client.view(created.match_id, None).phase == types_pb2.MATCH_PHASE_WAITING
    with pytest.raises(grpc.RpcError) as refused:
        client.lobby.CreateMatch(secret_create(types_pb2.OPPONENT_KIND_OPEN, secret),
                                 timeout=10)
    assert (refused.value.code(), reason(refused.value)) == (
        grpc.StatusCode.INVALID_ARGUMENT, "bad-seat-secret")


@pytest.mark.parametrize("kind", [types_pb2.OPPONENT_KIND_OPEN, types_pb2.OPPONENT_KIND_LOCAL])
def test_a_create_sent_again_with_its_secret_answers_the_same_match(engine: Engine,
                                                                    kind: int) -> None:
    """A create whose answer was lost left a match its creator never learned of (held
    against it, an open one listed in the lobby, until it expired) and the creator made
    another. Sent again with its secret, it answers the match it made: the same id,
    seat (drawn at random the first time), tokens and invite code, and makes no other."""
    client = Client.to(engine.address)
    first, again = (client.lobby.CreateMatch(secret_create(kind, SECRET), timeout=10)
                    for _ in range(2))
    assert again == first
    assert first.seat_token == f"{first.match_id}.{SECRET}"
    assert bool(first.other_seat_token) == (kind == types_pb2.OPPONENT_KIND_LOCAL)
    assert bool(first.invite_code) == (kind == types_pb2.OPPONENT_KIND_OPEN)
    assert client.view(first.match_id, again.seat_token).viewer == first.seat
    if first.other_seat_token:
        assert client.view(first.match_id, again.other_seat_token).viewer != first.seat
    assert client.view(first.match_id, None).version == 1  # created once
    other = client.lobby.CreateMatch(secret_create(kind, SECRET.upper()), timeout=10)
    assert other.match_id != first.match_id  # another secret, another match


def test_a_create_secret_names_one_match(engine: Engine) -> None:
    """The same secret with other settings is not the same create sent again: refused,
    the match it made unchanged, and no second match made under it."""
    client = Client.to(engine.address)
    first = client.lobby.CreateMatch(secret_create(types_pb2.OPPONENT_KIND_OPEN, SECRET + "x"),
                                     timeout=10)
    for changed in (secret_create(types_pb2.OPPONENT_KIND_LOCAL, SECRET + "x"),
                    secret_create(types_pb2.OPPONENT_KIND_OPEN, SECRET + "x", "basic")):
        with pytest.raises(grpc.RpcError) as used:
            client.lobby.CreateMatch(changed, timeout=10)
        assert (used.value.code(), reason(used.value)) == (
            grpc.StatusCode.FAILED_PRECONDITION, "seat-secret-used")
    view = client.view(first.match_id, first.seat_token)
    assert (view.version, view.phase, view.options.ruleset) == (
        1, types_pb2.MATCH_PHASE_WAITING, "standard")


def test_a_create_sent_twice_at_once_makes_one_match(engine: Engine) -> None:
    """A create sent again while the first is still on its way: both answer one match."""
    clients = [Client.to(engine.address) for _ in range(8)]
    request = secret_create(types_pb2.OPPONENT_KIND_OPEN, SECRET + "y")
    with ThreadPoolExecutor(len(clients)) as pool:
        answers = list(pool.map(lambda c: c.lobby.CreateMatch(request, timeout=10), clients))
    assert all(answer == answers[0] for answer in answers)
    assert clients[0].view(answers[0].match_id, None).version == 1


def test_the_same_action_id_twice_applies_once_with_the_same_answer(engine: Engine) -> None:
    clients = [Client.to(engine.address) for _ in range(2)]
    created = clients[0].create("standard", seed=3)
    view = clients[0].view(created.match_id, created.seat_token)
    action = next(a for a in view.legal_actions if a.startswith("play"))
    barrier = threading.Barrier(2)

    def send(i: int) -> bytes:
        barrier.wait()
        return clients[i].submit(created.match_id, created.seat_token, view.version, [action],
                                 "same-id").SerializeToString()

    with ThreadPoolExecutor(2) as pool:
        answers = list(pool.map(send, [0, 1]))
    assert answers[0] == answers[1]
    later = clients[0].submit(created.match_id, created.seat_token, view.version, [action],
                              "same-id")  # a late retry: still the original answer
    assert later.SerializeToString() == answers[0]
    after = clients[0].view(created.match_id, created.seat_token)
    assert after.version == view.version + 1
    record = clients[0].get_record(created.match_id, created.seat_token)
    assert [e.text for e in record.events].count(action) == 1


def test_an_action_id_sent_again_with_other_actions_is_refused(engine: Engine) -> None:
    """A client developer sent its last id again with other actions and got the first
    answer back, OK, while nothing happened. The seat's last id is answered from the
    store only for the same actions (written either way: case and spacing do not
    matter); other actions are INVALID_ARGUMENT
    `action-id-reused` and change nothing, on the quick path (the engine applies the
    actions to its copy and the commit finds the record) and on the checked one."""
    client = Client.to(engine.address)
    created = client.create("standard", seed=5)
    match_id, token = created.match_id, created.seat_token
    view = client.view(match_id, token)
    first, other = [a for a in view.legal_actions if a.startswith("play")][:2]
    answer = client.submit(match_id, token, view.version, [first], "reused")
    same = client.submit(match_id, token, view.version, ["  " + first.lower()], "reused")
    assert same.SerializeToString() == answer.SerializeToString()
    # At the old version the engine reads the store (checked path); at the new one the
    # draw is legal, so it is committed without a read and the commit meets the record.
    for version, actions in ((view.version, [other]), (view.version + 1, ["draw troop"])):
        with pytest.raises(grpc.RpcError) as refused:
            client.submit(match_id, token, version, actions, "reused")
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT, actions
        assert reason(refused.value) == "action-id-reused", actions
    after = client.view(match_id, token)
    assert after.version == view.version + 1
    events = [e.text for e in client.get_record(match_id, token).events]
    assert events.count(first) == 1 and other not in events


def test_an_earlier_action_id_sent_again_is_refused_not_applied_twice(engine: Engine,
                                                                      redis_url: str) -> None:
    """Nineteenth audit: the engine kept each seat's latest answer only, and an earlier id
    sent again at the current version (as a client retrying after ABORTED does) was
    applied again: a second draw under one id. The seat's spent ids are kept (the newest
    sixteen or so): such a request is FAILED_PRECONDITION `action-id-used`, nothing
    applied, on the quick path and the checked one."""
    client = Client.to(engine.address)
    created = client.create("standard", seed=5)
    assert created.other_seat_token
    match_id, tokens = created.match_id, (created.seat_token, created.other_seat_token)

    def send(seat: int, actions: list[str], action_id: str) -> int:
        version = client.view(match_id, tokens[seat]).version
        return client.submit(match_id, tokens[seat], version, actions, action_id).view.version

    def play(seat: int) -> str:
        view = client.view(match_id, tokens[seat])
        return next(a for a in view.legal_actions if a.startswith("play"))

    send(0, [play(0)], "play-1")
    drawn_at = send(0, ["draw troop"], "draw-1")
    send(1, [play(1), "draw troop"], "other-seat")
    send(0, [play(0)], "play-2")  # draw-1 is spent now, and a draw is legal again
    for version in (client.view(match_id, tokens[0]).version, drawn_at - 1):
        with pytest.raises(grpc.RpcError) as refused:
            client.submit(match_id, tokens[0], version, ["draw troop"], "draw-1")
        assert (refused.value.code(), reason(refused.value)) in {
            (grpc.StatusCode.FAILED_PRECONDITION, "action-id-used"),
            (grpc.StatusCode.ABORTED, "stale-version"),  # the old version: refused first
        }, version
        if version != drawn_at - 1:
            assert reason(refused.value) == "action-id-used"
    view = client.view(match_id, tokens[0])
    assert view.phase != types_pb2.MATCH_PHASE_FINISHED and len(view.hand) == 6  # no draw
    # The spent list is bounded: after many more requests the oldest ids are let go.
    for n in range(60):
        view = client.view(match_id, tokens[0])
        assert view.phase != types_pb2.MATCH_PHASE_FINISHED, "over: its spent ids are gone"
        seat = SEATS.index(view.current_seat)
        send(seat, [client.view(match_id, tokens[seat]).legal_actions[0]],
             f"later-{n}".ljust(64, "\U0001f600"))  # 4 bytes a character: as many kept
    store = redis.Redis.from_url(redis_url)
    spent = store.hget(f"bl:{{{match_id}}}:idem", "spent:a:0")
    store.close()
    digest = hashlib.sha1(b"a:0:draw-1").hexdigest()[:16].encode()
    assert spent is not None and len(spent) == SPENT_IDS * 16  # the newest sixteen
    assert digest not in [spent[k:k + 16] for k in range(0, len(spent), 16)]


@pytest.mark.timeout(120)
def test_two_engine_processes_serve_one_match_alternately(redis_url: str) -> None:
    engines = [_serve(redis_url), _serve(redis_url)]
    try:
        clients = [Client.to(address) for _, address in engines]
        created = clients[0].create("standard")
        tokens = (created.seat_token, created.other_seat_token)
        events: list[types_pb2.MatchEvent] = []
        snapshots: list[types_pb2.MatchView] = []

        def watch() -> None:  # the stream comes from the second engine
            for item in clients[1].watch(created.match_id, tokens[1]):
                if item.HasField("snapshot"):
                    snapshots.append(item.snapshot)
                else:
                    events.append(item.event)

        reader = threading.Thread(target=watch)
        reader.start()
        rng = random.Random(11)
        turn = 0
        while step(clients[turn % 2], created.match_id, tokens, rng):
            turn += 1
        reader.join(20)
        assert not reader.is_alive()
        start = snapshots[0].last_event_number
        assert [e.number for e in events] == list(range(start + 1, start + 1 + len(events)))
        assert events[-1].kind == types_pb2.EVENT_KIND_GAME_OVER
        assert turn > 20
    finally:
        for process, _ in engines:
            process.kill()
            process.wait(10)


def _serve(redis_url: str) -> tuple[subprocess.Popen[str], str]:
    return start_serve("--no-web", "--log-level", "warning", "--action-rate", "10000",
                       "--call-rate", "10000",
                       env={"REDIS_URL": redis_url})


@pytest.mark.timeout(120)
def test_engine_killed_mid_match_and_restarted_goes_on(redis_url: str) -> None:
    process, address = _serve(redis_url)
    try:
        client = Client.to(address)
        created = client.create("standard")
        tokens = (created.seat_token, created.other_seat_token)
        rng = random.Random(5)
        for _ in range(15):
            assert step(client, created.match_id, tokens, rng)
        before = client.view(created.match_id, tokens[0])
        client.channel.close()
        process.kill()  # SIGKILL: no drain, no goodbye
        process.wait(10)
        process, address = _serve(redis_url)
        client = Client.to(address)
        after = client.view(created.match_id, tokens[0])
        assert after.version == before.version and after.position == before.position
        steps = 0
        while step(client, created.match_id, tokens, rng):
            steps += 1
        assert client.view(created.match_id, tokens[0]).phase == types_pb2.MATCH_PHASE_FINISHED
        record = client.get_record(created.match_id)
        assert [e.number for e in record.events] == list(range(1, len(record.events) + 1))
    finally:
        process.kill()
        process.wait(10)


def test_a_record_read_as_the_match_ends_tells_one_moment(engine: Engine) -> None:
    """A race audit: a GetRecord racing the match's last commit read the match, then its
    events, and could answer the game's end in its events with `complete` false and the
    position still playing (24 of 260 such reads). Its events now stop at the match it
    read."""
    client = Client.to(engine.address)

    async def resign_among_reads(match_id: str, token: str) -> list[Any]:
        async with grpc.aio.insecure_channel(engine.address) as channel:
            records = record_pb2_grpc.RecordServiceStub(channel)
            game = game_pb2_grpc.GameServiceStub(channel)

            def reads() -> list[Any]:  # each call starts as it is made
                return [records.GetRecord(record_pb2.GetRecordRequest(match_id=match_id))
                        for _ in range(4)]
            before = reads()
            resign = game.Resign(game_pb2.ResignRequest(match_id=match_id, action_id="r"),
                                 metadata=auth(token))
            answers = await asyncio.gather(*before, resign, *reads())
            return [a for a in answers if isinstance(a, record_pb2.GetRecordResponse)]

    try:
        told = []
        for _ in range(25):
            created = client.create()
            for record in engine.call(resign_among_reads(created.match_id,
                                                         created.seat_token)):
                ended = any(e.kind == types_pb2.EVENT_KIND_RESIGNED for e in record.events)
                told.append(ended)
                assert ended == record.complete, record
                assert ("status: playing" in record.position) != record.complete
        assert any(told) and not all(told)  # the race was run: both sides of the end seen
    finally:
        client.channel.close()
