"""The post-game review's figures on recorded games (bots playing fixed deals through the
rules core): estimates in [0, 1] that follow from each mover's view, losses measured
against the AI's preferred move, the costliest moves the largest losses, and no peeking
(the opponent's hidden cards swapped for others the mover could not tell apart change
nothing)."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import grpc
import pytest
import redis

from battleline.v1 import ai_pb2, ai_pb2_grpc, record_pb2, record_pb2_grpc, types_pb2
from battleline_ai.bots import make_bot
from battleline_ai.odds import seen_position_value
from battleline_ai.review import COSTLIEST, MIN_LOSS, GameReview, judge_move, review_game
from battleline_client.client import Client
from battleline_client.errors import BattleLineError
from battleline_engine.ratelimit import Rate
from battleline_host.local import LocalService
from battleline_rules import (
    GameRecord,
    GameState,
    Kind,
    format_action,
    load_position,
    new_game,
    parse_action,
    record_of,
)
from tests.ai.service_harness import AI_KEY, WITH_AI, play_random, played_match

# (ruleset, seed): a tactics game, a game without tactics, the 52-card deck.
GAMES = [("standard", 1501), ("standard", 1502), ("basic", 1503), ("deck52", 1504)]


def recorded_game(ruleset: str, seed: int) -> GameRecord:
    """prob against a noisy heuristic (it makes mistakes to find), from one deal."""
    bots = [make_bot("prob"), make_bot("heuristic:noise=0.3")]
    rng = random.Random(seed)
    state = new_game(ruleset, seed=seed)
    actions = []
    while not state.is_over:
        action = bots[state.current_player].choose(state.view(state.current_player), rng)
        actions.append(format_action(action))
        state.apply(action)
    return record_of(state, actions)


def states(record: GameRecord) -> list[GameState]:
    """The state before each action, and the final one."""
    state = new_game(record.ruleset, record.options, record.seed)
    out = [state.clone()]
    for text in record.actions:
        state.apply(parse_action(text))
        out.append(state.clone())
    return out


@pytest.fixture(scope="module", params=GAMES, ids=[f"{r}-{s}" for r, s in GAMES])
def reviewed(request: pytest.FixtureRequest) -> tuple[GameRecord, GameReview]:
    record = recorded_game(*request.param)
    started = time.process_time()
    review = review_game(record)
    seconds = time.process_time() - started
    print(f"review {request.param}: {len(record.actions)} moves in {seconds:.2f} s CPU "
          f"({1000 * seconds / len(record.actions):.1f} ms a move)")
    return record, review


def test_estimates_follow_from_each_movers_position(
        reviewed: tuple[GameRecord, GameReview]) -> None:
    record, review = reviewed
    history = states(record)
    assert [m.action for m in review.moves] == record.actions
    for move, before, after in zip(review.moves, history, history[1:], strict=False):
        assert move.seat == before.current_player
        assert 0.0 <= move.before <= 1.0 and 0.0 <= move.after <= 1.0
        assert move.before == seen_position_value(before, move.seat)
        assert move.after == seen_position_value(after, move.seat)
    # A seat's next move starts from where its last one left it, unless something
    # happened in between (the opponent moved, or the mover drew a card).
    for move, following in zip(review.moves, review.moves[1:], strict=False):
        if following.seat == move.seat:
            assert following.before == move.after
    assert history[-1].is_over
    last = review.moves[-1]
    assert last.after == (0.5 if history[-1].winner is None
                          else float(history[-1].winner == last.seat))


def test_losses_are_against_the_preferred_move(reviewed: tuple[GameRecord, GameReview]) -> None:
    record, review = reviewed
    history = states(record)
    judged = 0
    for move, before in zip(review.moves, history, strict=False):
        legal = before.legal_actions()
        if move.preferred == "":
            assert move.loss == 0.0
            assert len(legal) == 1 or parse_action(move.action).kind in (
                Kind.DRAW, Kind.SCOUT_DRAW, Kind.CLAIM)
            continue
        judged += 1
        preferred = parse_action(move.preferred)
        assert preferred in legal
        assert preferred.kind not in (Kind.DRAW, Kind.SCOUT_DRAW, Kind.CLAIM)
        assert move.loss >= 0.0
        # The preferred move played on the real state gives the estimate the review
        # found on a world sampled from the mover's view: it reveals nothing new.
        trial = before.clone()
        trial.apply(preferred)
        assert seen_position_value(trial, move.seat) == pytest.approx(move.after + move.loss)
        assert (move.loss == 0.0) == (move.preferred == move.action)
    assert judged > len(review.moves) // 3


def test_the_costliest_moves_are_the_largest_losses(
        reviewed: tuple[GameRecord, GameReview]) -> None:
    _, review = reviewed
    losses = [m.loss for m in review.moves]
    costliest = [losses[i] for i in review.costliest]
    assert costliest == sorted(costliest, reverse=True)
    assert len(costliest) == min(COSTLIEST, sum(1 for x in losses if x >= MIN_LOSS))
    left_out = [x for i, x in enumerate(losses) if i not in review.costliest]
    assert all(x <= min(costliest) for x in left_out) if costliest else max(losses) < MIN_LOSS


def _swapped_world(state: GameState, seat: int, deck: int, drawn: int,
                   rng: random.Random) -> GameState:
    """A full state the mover ``seat`` cannot tell from ``state``: its view with the hidden
    cards dealt anew, and ``drawn`` (the card the move draws from ``deck``, or -1) put
    back on top of that deck, so the move draws the same card."""
    world = state.view(seat).sample_world(rng)
    if drawn >= 0:
        top = world.decks[deck]
        holder = next(cards for cards in (*world.decks, world.hands[1 - seat], world.removed)
                      if drawn in cards)
        holder[holder.index(drawn)], top[-1] = top[-1], drawn
    return world


def test_no_peeking_at_the_opponents_hidden_cards(
        reviewed: tuple[GameRecord, GameReview]) -> None:
    record, review = reviewed
    history = states(record)
    rng = random.Random(7)
    changed = 0
    for move, before in zip(review.moves, history, strict=False):
        action = parse_action(move.action)
        seat = move.seat
        real_after = before.clone()
        drawn = real_after.apply(action).drawn
        for _ in range(2):
            world = _swapped_world(before, seat, action.deck, drawn, rng)
            changed += world.hands[1 - seat] != before.hands[1 - seat]
            after = world.clone()
            assert after.apply(action).drawn == drawn
            assert after.view(seat).hands[seat] == real_after.view(seat).hands[seat]
            assert judge_move(world, action, after, move.index) == move
    assert changed > len(review.moves)  # the swaps did hide other cards from the mover


# ---------------------------------------------------------------- through the services


def _refusal(call: Callable[[], object]) -> BattleLineError:
    with pytest.raises(BattleLineError) as err:
        call()
    return err.value


def test_get_review_through_a_real_engine_and_ai_service(
        ai_engine: LocalService, redis_url: str) -> None:
    with Client(ai_engine.address, timeout=60) as client:
        assert _refusal(lambda: client.review("no-such-match")).code \
            == grpc.StatusCode.NOT_FOUND
        live = client.create(opponent="local", clock="none")
        refused = _refusal(lambda: client.review(live.match_id))
        assert refused.code == grpc.StatusCode.FAILED_PRECONDITION
        assert "over" in str(refused)
        # A match cancelled before its first game was reviewed as an empty game 1 (and
        # charged a new review): thirty-first audit.
        waiting = client.create(opponent="open")
        client.seat(waiting.seat).cancel()
        refused = _refusal(lambda: client.review(waiting.match_id))
        assert refused.code == grpc.StatusCode.FAILED_PRECONDITION
        assert refused.reason == "cancelled", refused
        # ... and one resigned right after the join, before any move: an empty review,
        # charged (the thirty-first audit's re-test).
        created = client.create(opponent="open")
        client.join(invite_code=created.invite_code, name="g")
        client.seat(created.seat).resign()
        refused = _refusal(lambda: client.review(created.match_id))
        assert refused.code == grpc.StatusCode.FAILED_PRECONDITION
        assert refused.reason == "no-moves" and "game 1" in str(refused), refused

        match_id = played_match(client, seed=1505)
        started = time.perf_counter()
        review = client.review(match_id).review
        print(f"GetReview, first ask: {time.perf_counter() - started:.2f} s for "
              f"{len(review.moves)} moves")
        record = client.record(match_id)
        actions = [e.text for e in record.events if e.kind == types_pb2.EVENT_KIND_ACTION]
        assert len(review.moves) == len(actions) and review.game == 1
        for move, text in zip(review.moves, actions, strict=True):
            assert text.startswith(move.action)  # a draw's event also names the card
        # The figures are the review module's own on the replayed game.
        final = load_position(record.position)
        assert final.seed is not None
        local = review_game(GameRecord(final.ruleset.name, final.options, final.seed,
                                       [m.action for m in review.moves]))
        assert [(m.estimate_before, m.estimate_after, m.preferred_action, m.loss)
                for m in review.moves] == [(m.before, m.after, m.preferred, m.loss)
                                           for m in local.moves]
        assert list(review.costliest) == [i + 1 for i in local.costliest]

        # Kept in Redis with the match, and read from there on the next ask.
        key = f"bl:{{{match_id}}}:review"
        store = redis.Redis.from_url(redis_url)
        assert 0 < store.ttl(key) <= store.ttl(f"bl:{{{match_id}}}:m")
        marked = record_pb2.GetReviewResponse(review=review)
        marked.review.evaluator = "read from the cache"
        store.set(key, marked.SerializeToString())
        assert client.review(match_id).review.evaluator == "read from the cache"


def test_the_ai_service_refuses_reviews_past_its_limits(ai_engine: LocalService) -> None:
    """One review per match at a time, and no more than the search queue holds for one
    client (2; every caller naming none is one): the rest RESOURCE_EXHAUSTED at once."""
    record = recorded_game("standard", 1501)
    assert ai_engine.config is not None
    stub = ai_pb2_grpc.AiServiceStub(grpc.insecure_channel(ai_engine.config.ai_address))

    def ask(match_id: str) -> str:
        request = ai_pb2.ReviewRequest(
            ruleset=record.ruleset, options=record.options.text(), seed=record.seed,
            actions=record.actions, match_id=match_id)
        try:
            stub.Review(request, metadata=(("authorization", f"Bearer {AI_KEY}"),),
                        timeout=60)
            return "OK"
        except grpc.RpcError as err:
            assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, err
            return str(err.details())

    with ThreadPoolExecutor(8) as pool:
        same = list(pool.map(ask, ["m1"] * 4))
        assert same.count("OK") >= 1 and any("one at a time" in r for r in same), same
        many = list(pool.map(ask, [f"m{i}" for i in range(8)]))
        assert many.count("OK") >= 1 and any("the most it may" in r for r in many), many
    assert ask("m1") == "OK"  # nothing held once they are done
    with pytest.raises(grpc.RpcError) as err:
        stub.Review(ai_pb2.ReviewRequest(ruleset="standard", seed=1, actions=["play X1@1"]),
                    metadata=(("authorization", f"Bearer {AI_KEY}"),), timeout=60)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_get_review_shares_one_review_per_match_and_is_refused_past_the_ais_queue(
        ai_engine: LocalService) -> None:
    """Callers of one match's review while it is made wait for that one review (the AI
    service would refuse a second); reviews of more matches than the AI's queue holds
    for one client (2) are refused at once, RESOURCE_EXHAUSTED with a reason."""
    with Client(ai_engine.address, timeout=60) as client:
        created = [client.create(opponent="local", clock="none", seed=1510 + i)
                   for i in range(6)]
        seats = [client.seat(h) for c in created for h in (c.seat, c.other) if h is not None]
        play_random(client, seats, random.Random(1510))
        ids = [c.match_id for c in created]

        def ask(match_id: str) -> bytes | str:
            try:
                return client.review(match_id).SerializeToString()
            except BattleLineError as err:
                assert err.code == grpc.StatusCode.RESOURCE_EXHAUSTED, err
                return err.reason

        with ThreadPoolExecutor(6) as pool:
            same = list(pool.map(ask, [ids[0]] * 4))
            assert all(isinstance(r, bytes) for r in same) and len(set(same)) == 1, same
            many = list(pool.map(ask, ids[1:]))
        refused = [r for r in many if isinstance(r, str)]
        assert refused and set(refused) == {"review-busy"}, many
        assert len(refused) < len(many)
        assert all(isinstance(ask(i), bytes) for i in ids)  # later, every one is answered


def test_one_clients_reviews_do_not_take_another_clients_places(
        redis_url: str, ai_service: str) -> None:
    """The engine names the asking client to the AI service, so two clients asking two
    new reviews each at once are all answered (until the twenty-fourth session every
    review named no client and shared one client's 2 places: two of the four were
    refused)."""
    config = replace(WITH_AI, ai_address=ai_service, trusted_proxies=("127.0.0.0/8",))
    with LocalService(redis_url, config=config) as engine, \
            Client(engine.address, timeout=60) as client, \
            grpc.insecure_channel(engine.address) as channel:
        ids = [played_match(client, seed=1530 + i) for i in range(4)]
        stub = record_pb2_grpc.RecordServiceStub(channel)

        def ask(asked: tuple[str, str]) -> grpc.StatusCode:
            match_id, address = asked
            try:
                stub.GetReview(record_pb2.GetReviewRequest(match_id=match_id),
                               metadata=(("x-forwarded-for", address),), timeout=60)
                return grpc.StatusCode.OK
            except grpc.RpcError as err:
                return err.code()

        clients = ["203.0.113.1", "203.0.113.1", "203.0.113.2", "203.0.113.2"]
        with ThreadPoolExecutor(4) as pool:
            codes = list(pool.map(ask, zip(ids, clients, strict=True)))
        assert codes == [grpc.StatusCode.OK] * 4


def test_new_reviews_are_limited_per_client_and_made_ones_are_free(
        redis_url: str, ai_service: str) -> None:
    """Each new review costs the AI service half a second in the queue players' hints wait
    in, and any finished match may be reviewed: a client gets a burst of new reviews, then
    RESOURCE_EXHAUSTED (with when to retry) until its bucket refills; reading a review
    already made is not limited."""
    config = replace(WITH_AI, ai_address=ai_service, review_rate=Rate(per_s=0.01, burst=2))
    with LocalService(redis_url, config=config) as engine, \
            Client(engine.address, timeout=60) as client:
        ids = [played_match(client, seed=1520 + i) for i in range(3)]
        first = client.review(ids[0]).SerializeToString()
        client.review(ids[1])
        refused = _refusal(lambda: client.review(ids[2]))
        assert refused.code == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert refused.reason == "rate-limited" and "new reviews" in str(refused)
        for _ in range(5):
            assert client.review(ids[0]).SerializeToString() == first


def test_a_review_the_ai_had_no_room_for_costs_no_new_review(
        redis_url: str, ai_service: str) -> None:
    """Twenty-third audit: reviews the AI service refused at once (the client's 2 places
    in its queue taken) were charged like made ones, and used up the client's burst.
    Four asked at once against a burst of 4: two made, two refused `review-busy`, and
    those two, asked again, are made (without the refunds: `rate-limited`)."""
    config = replace(WITH_AI, ai_address=ai_service, review_rate=Rate(per_s=0.001, burst=4))
    with LocalService(redis_url, config=config) as engine, \
            Client(engine.address, timeout=60) as client:
        ids = [played_match(client, seed=1540 + i) for i in range(4)]

        def ask(match_id: str) -> str:
            try:
                client.review(match_id)
                return "made"
            except BattleLineError as err:
                return err.reason

        with ThreadPoolExecutor(4) as pool:
            first = list(pool.map(ask, ids))
        assert sorted(first) == ["made", "made", "review-busy", "review-busy"], first
        again = [ask(m) for m, said in zip(ids, first, strict=True) if said != "made"]
        assert again == ["made", "made"], again
