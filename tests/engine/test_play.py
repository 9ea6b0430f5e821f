"""Complete matches over real gRPC and a real Redis: every ruleset, two clients, spectators,
resumable streams, series, seeds, records, reflection."""

from __future__ import annotations

import random
import threading
import time

import grpc
import pytest
import redis as sync_redis
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)

from battleline.v1 import game_pb2, lobby_pb2, types_pb2, watch_pb2
from battleline_rules import load_position, parse_card

from .harness import SEATS, Client, Engine, play_local
from .test_errors import reason


def collect(stream: object, into: list[types_pb2.MatchEvent], snapshots: list[object],
            stop_after: int | None = None) -> None:
    """Read a Watch stream into lists (on a thread); stop after `stop_after` events."""
    for item in stream:  # type: ignore[attr-defined]
        if item.HasField("snapshot"):
            snapshots.append(item.snapshot)
        else:
            into.append(item.event)
            if stop_after is not None and len(into) >= stop_after:
                stream.cancel()  # type: ignore[attr-defined]
                return


def numbers(events: list[types_pb2.MatchEvent]) -> list[int]:
    return [e.number for e in events]


@pytest.mark.parametrize("ruleset", ["standard", "basic", "deck52"])
def test_two_clients_play_open_match_to_the_end(engine: Engine, ruleset: str) -> None:
    host, guest = Client.to(engine.address), Client.to(engine.address)
    created = host.create(ruleset, kind=types_pb2.OPPONENT_KIND_OPEN,
                          seat_options=types_pb2.SeatOptions(display_name="host"))
    assert created.invite_code and not created.other_seat_token
    listed = host.lobby.ListOpenMatches(lobby_pb2.ListOpenMatchesRequest(ruleset=ruleset))
    assert created.match_id in [m.match_id for m in listed.matches]
    waiting = host.view(created.match_id, created.seat_token).players
    assert [(p.display_name, p.occupied) for p in waiting] == [("host", True), ("", False)]
    joined = guest.lobby.JoinMatch(lobby_pb2.JoinMatchRequest(
        invite_code=created.invite_code, seat_options=types_pb2.SeatOptions(display_name="g")))
    assert joined.seat == types_pb2.SEAT_SECOND
    players = host.view(created.match_id, None).players
    assert [(p.display_name, p.hosted_ai) for p in players] == [("host", False), ("g", False)]
    with pytest.raises(grpc.RpcError) as again:
        guest.lobby.JoinMatch(lobby_pb2.JoinMatchRequest(match_id=created.match_id))
    assert again.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    spectator_events: list[types_pb2.MatchEvent] = []
    snapshots: list[object] = []
    spectator = threading.Thread(target=collect, args=(
        host.watch(created.match_id), spectator_events, snapshots))
    spectator.start()
    players = {0: (host, created.seat_token), 1: (guest, joined.seat_token)}
    rng = random.Random(ruleset)
    requests = 0
    while True:
        view = host.view(created.match_id, created.seat_token)
        if view.phase == types_pb2.MATCH_PHASE_FINISHED:
            break
        seat = SEATS.index(view.current_seat)
        who, token = players[seat]
        mine = who.view(created.match_id, token)
        if mine.legal_actions and rng.random() < 0.3 and any(
                a.startswith("claim") for a in mine.legal_actions):
            action = next(a for a in mine.legal_actions if a.startswith("claim"))
        else:
            action = rng.choice(list(mine.legal_actions))
        who.submit(created.match_id, token, mine.version, [action])
        requests += 1
        assert requests < 2000
    spectator.join(20)
    assert not spectator.is_alive()
    assert len(snapshots) == 1
    first = snapshots[0].last_event_number  # type: ignore[attr-defined]
    assert numbers(spectator_events) == list(range(first + 1, first + 1 + len(spectator_events)))
    assert spectator_events[-1].kind == types_pb2.EVENT_KIND_GAME_OVER
    record = host.get_record(created.match_id)
    assert record.complete and record.HasField("seed")
    assert numbers(list(record.events)) == list(range(1, len(record.events) + 1))


@pytest.mark.parametrize("ruleset", ["standard", "basic", "deck52"])
def test_local_matches_in_every_ruleset(client: Client, ruleset: str) -> None:
    for i in range(3):
        played = play_local(client, ruleset, random.Random(i), batch=i != 1,
                            auto_claim=i != 2)
        assert played.final is not None
        assert played.final.phase == types_pb2.MATCH_PHASE_FINISHED
        assert played.final.end_reason != types_pb2.END_REASON_UNSPECIFIED


def test_start_of_turn_claims_and_series(client: Client) -> None:
    played = play_local(client, "standard", random.Random(5), series_games=3,
                        claim_timing=types_pb2.CLAIM_TIMING_START_OF_TURN)
    final = played.final
    assert final is not None and final.game_number == 3
    scores = [p.series_score for p in final.players]
    assert max(scores) >= 5  # at least one game was won outright (or drawn games scored flags)
    record = client.get_record(played.match_id, played.tokens[0])
    kinds = [e.kind for e in record.events]
    assert kinds.count(types_pb2.EVENT_KIND_GAME_STARTED) == 3
    assert kinds.count(types_pb2.EVENT_KIND_GAME_OVER) == 3
    # The points of a series, each seat named (a player read "score 5-1" as winner first).
    last = [e.text for e in record.events if e.kind == types_pb2.EVENT_KIND_GAME_OVER][-1]
    assert last.endswith(f"series points: the first seat {scores[0]}, "
                         f"the second seat {scores[1]}"), last
    single = play_local(client, "basic", random.Random(6))
    over = [e.text for e in client.get_record(single.match_id, single.tokens[0]).events
            if e.kind == types_pb2.EVENT_KIND_GAME_OVER]
    assert len(over) == 1 and "points" not in over[0] and "score" not in over[0], over


def test_seed_reproduces_the_deal_and_is_refused_for_open_matches(client: Client) -> None:
    a = client.create("standard", seed=1234)
    b = client.create("standard", seed=1234)
    hand = [client.view(m.match_id, m.seat_token).hand for m in (a, b)]
    assert hand[0] == hand[1]
    with pytest.raises(grpc.RpcError) as refused:
        client.create("standard", kind=types_pb2.OPPONENT_KIND_OPEN, seed=1)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "seed" in (refused.value.details() or "")


def test_watcher_disconnects_and_resumes_without_gaps(client: Client) -> None:
    created = client.create("standard")
    tokens = (created.seat_token, created.other_seat_token)
    first: list[types_pb2.MatchEvent] = []
    snaps: list[object] = []
    reader = threading.Thread(target=collect, args=(
        client.watch(created.match_id, tokens[1]), first, snaps, 25))
    reader.start()
    rng = random.Random(7)
    version_of: dict[int, int] = {}
    halfway = threading.Event()
    second: list[types_pb2.MatchEvent] = []

    def resume() -> None:
        halfway.wait(60)
        reader.join(60)
        collect(client.watch(created.match_id, tokens[1], resume_after=first[-1].number),
                second, snaps)

    resumer = threading.Thread(target=resume)
    resumer.start()
    requests = 0
    while True:
        view = client.view(created.match_id, tokens[0])
        if view.phase == types_pb2.MATCH_PHASE_FINISHED:
            break
        seat = SEATS.index(view.current_seat)
        mine = client.view(created.match_id, tokens[seat])
        client.submit(created.match_id, tokens[seat], mine.version,
                      [rng.choice(list(mine.legal_actions))])
        requests += 1
        version_of[requests] = mine.version
        if requests == 40:
            halfway.set()
            time.sleep(0.3)
    halfway.set()
    resumer.join(30)
    assert not resumer.is_alive()
    assert len(snaps) == 1, "resuming must not send a second snapshot"
    got = numbers(first) + numbers(second)
    start = snaps[0].last_event_number  # type: ignore[attr-defined]
    assert got == list(range(start + 1, start + 1 + len(got)))
    assert second[-1].kind == types_pb2.EVENT_KIND_GAME_OVER
    # The stream sent to seat 1 matches the record projected for it while live.
    record = client.get_record(created.match_id, tokens[1])
    assert [e.number for e in record.events][start:] == got


def test_resume_from_a_trimmed_point_gets_a_fresh_snapshot(client: Client, redis_url: str) -> None:
    created = client.create("standard")
    raw = sync_redis.Redis.from_url(redis_url)
    raw.xtrim(f"bl:{{{created.match_id}}}:ev", minid="3-0")  # drop events 1-2
    raw.close()
    stream = client.watch(created.match_id, created.seat_token, resume_after=0)
    item = next(iter(stream))
    assert item.HasField("snapshot")
    stream.cancel()


def test_reflection_lists_every_service(engine: Engine) -> None:
    with grpc.insecure_channel(engine.address) as channel:
        services = set(ProtoReflectionDescriptorDatabase(channel).get_services())
    assert {"battleline.v1.LobbyService", "battleline.v1.GameService",
            "battleline.v1.WatchService", "battleline.v1.RecordService",
            "grpc.health.v1.Health"} <= services


def test_resigning_ends_the_match_once(client: Client) -> None:
    created = client.create("standard", series_games=3)
    tokens = (created.seat_token, created.other_seat_token)
    from battleline.v1 import game_pb2

    def resign(token: str, action_id: str) -> game_pb2.ResignResponse:
        return client.game.Resign(game_pb2.ResignRequest(match_id=created.match_id,
                                                         action_id=action_id),
                                  metadata=[("authorization", f"Bearer {token}")], timeout=10)

    first = resign(tokens[1], "r1")  # not its turn: resigning is allowed any time
    assert first.view.phase == types_pb2.MATCH_PHASE_FINISHED
    assert first.view.winner == types_pb2.SEAT_FIRST
    assert first.view.end_reason == types_pb2.END_REASON_RESIGNATION
    assert resign(tokens[1], "r1") == first  # a retry answers the same
    with pytest.raises(grpc.RpcError) as over:
        resign(tokens[0], "r2")
    assert over.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    record = client.get_record(created.match_id)
    assert record.complete and record.events[-2].kind == types_pb2.EVENT_KIND_RESIGNED


def test_lobby_lists_open_matches_page_by_page(client: Client, redis_url: str) -> None:
    ids = [client.create("deck52", kind=types_pb2.OPPONENT_KIND_OPEN).match_id
           for _ in range(7)]
    raw = sync_redis.Redis.from_url(redis_url)
    raw.zadd("bl:lobby", {match_id: 1_000 for match_id in ids[:5]})  # created in one ms
    raw.close()
    hidden = client.lobby.CreateMatch(lobby_pb2.CreateMatchRequest(
        options=types_pb2.MatchOptions(ruleset="deck52"),
        opponent=types_pb2.Opponent(kind=types_pb2.OPPONENT_KIND_OPEN, private=True)))
    seen: list[str] = []
    token = ""
    while True:
        page = client.lobby.ListOpenMatches(lobby_pb2.ListOpenMatchesRequest(
            ruleset="deck52", page_size=2, page_token=token))
        seen += [m.match_id for m in page.matches]
        assert all(m.open_seat != types_pb2.SEAT_UNSPECIFIED for m in page.matches)
        token = page.next_page_token
        if not token:
            break
        time.sleep(0.002)
    assert set(ids) <= set(seen) and hidden.match_id not in seen
    assert len(seen) == len(set(seen))


def test_position_text_only_on_request(client: Client) -> None:
    """Writing the position text is a third of a view's cost and most clients never read
    it: views carry it only when the request sets include_position."""
    created = client.create("standard")
    bare = client.view(created.match_id, created.seat_token, position=False)
    full = client.view(created.match_id, created.seat_token, position=True)
    assert bare.position == "" and full.position
    assert bare.version == full.version and bare.hand == full.hand
    seat_view = load_position(full.position)
    assert seat_view.viewer == 0 and sorted(seat_view.hands[0]) == sorted(
        parse_card(c) for c in full.hand)
    response = client.game.SubmitAction(game_pb2.SubmitActionRequest(
        match_id=created.match_id, expected_version=full.version, action_id="a1",
        actions=[full.legal_actions[0]]),
        metadata=[("authorization", f"Bearer {created.seat_token}")], timeout=10)
    assert response.view.version == response.version and response.view.position == ""
    stream = client.watcher.Watch(watch_pb2.WatchRequest(match_id=created.match_id),
                                  timeout=10)
    snapshot = next(iter(stream)).snapshot
    stream.cancel()
    assert snapshot.version == response.version and snapshot.position == ""


LocalMatch = tuple[lobby_pb2.CreateMatchResponse, tuple[str, str], types_pb2.MatchView]


def _new_local_match(client: Client, auto_claim: bool, seed: int) -> LocalMatch:
    """A LOCAL match of a given deal: its creation, both seats' tokens, the first seat's
    view."""
    created = client.create("standard", seed=seed,
                            seat_options=types_pb2.SeatOptions(auto_claim=auto_claim))
    tokens = (created.seat_token, created.other_seat_token)
    return created, tokens, client.view(created.match_id, tokens[0])


def test_a_request_ends_where_the_game_does(client: Client) -> None:
    """A race audit: a whole turn sent in one request (`claim 9, draw troop`) whose claim
    won the game was refused whole (`game-over`, the match left waiting on that seat),
    while the same turn with auto_claim was taken, its draw dropped. One rule now: the
    game's end ends the request, what follows it is not applied, and the answer's events
    end with the game's."""
    rng = random.Random(11)
    won_by_a_whole_turn = 0
    for seed in (2701, 2702, 2703):
        created, tokens, view = _new_local_match(client, auto_claim=False, seed=seed)
        while view.phase != types_pb2.MATCH_PHASE_FINISHED:
            seat = SEATS.index(view.current_seat)
            view = client.view(created.match_id, tokens[seat])
            legal = list(view.legal_actions)
            claims = [a for a in legal if a.startswith("claim ")]
            ends = [a for a in legal if a.startswith("draw ") or a == "end"]
            whole_turn = view.turn_step == types_pb2.TURN_STEP_FINISH and claims and ends
            actions = [*claims, ends[0]] if whole_turn else [
                rng.choice([a for a in legal if not a.startswith("claim ")] or legal)]
            if whole_turn:  # anything but the rest of the turn after the end is refused
                with pytest.raises(grpc.RpcError) as refused:
                    client.submit(created.match_id, tokens[seat], view.version,
                                  [*claims, "pass"])
                after_the_end = reason(refused.value) == "game-over"
            answer = client.submit(created.match_id, tokens[seat], view.version, actions)
            view = answer.view
        if whole_turn:
            won_by_a_whole_turn += 1
            assert after_the_end  # the same claims then a pass: refused, nothing applied
            kinds = [event.kind for event in answer.events]
            assert kinds[-1] == types_pb2.EVENT_KIND_GAME_OVER, answer.events
            assert not any(e.text.startswith(("draw ", "end")) for e in answer.events)
            record = client.get_record(created.match_id)
            assert record.complete and record.events[-1] == answer.events[-1]
    assert won_by_a_whole_turn >= 2  # random play mostly ends on a claim at FINISH


# Deals whose random play (the deal's seed seeds it) ends on a play whose claims win.
SEEDS_WON_BY_A_PLAYS_CLAIMS = (1, 2, 3)


def test_a_request_ends_where_auto_claims_end_the_game(client: Client) -> None:
    """The same rule with auto_claim, where the play's own claims win: its draw is let go,
    anything else after it refuses the request (an audit of the rule found it taken)."""
    for seed in SEEDS_WON_BY_A_PLAYS_CLAIMS:
        rng = random.Random(seed)
        created, tokens, view = _new_local_match(client, auto_claim=True, seed=seed)
        while view.phase != types_pb2.MATCH_PHASE_FINISHED:
            seat = SEATS.index(view.current_seat)
            view = client.view(created.match_id, tokens[seat])
            legal = list(view.legal_actions)
            plays = [a for a in legal if a.startswith("play ") and "@" in a]
            decks = [d.deck for d in view.decks if d.count > 0]
            if not (plays and view.turn_step == types_pb2.TURN_STEP_PLAY):
                view = client.submit(created.match_id, tokens[seat], view.version,
                                     [rng.choice(legal)]).view
                continue
            play = rng.choice(plays)
            with pytest.raises(grpc.RpcError) as refused:  # never legal after a play
                client.submit(created.match_id, tokens[seat], view.version, [play, "pass"])
            ended_by_it = reason(refused.value) == "game-over"
            answer = client.submit(created.match_id, tokens[seat], view.version,
                                   [play, f"draw {decks[0]}" if decks else "end"])
            view = answer.view
            assert ended_by_it == (view.phase == types_pb2.MATCH_PHASE_FINISHED), answer.events
        assert ended_by_it, seed  # the last play's claims won: draw let go, pass refused
