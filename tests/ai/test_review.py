"""The post-game review's figures on recorded games (bots playing fixed deals through the
rules core): estimates in [0, 1] that follow from each mover's view, losses measured
against the AI's preferred move, the costliest moves the largest losses, and no peeking
(the opponent's hidden cards swapped for others the mover could not tell apart change
nothing)."""

from __future__ import annotations

import random
import time

import pytest

from battleline_ai.bots import make_bot
from battleline_ai.odds import seen_position_value
from battleline_ai.review import COSTLIEST, MIN_LOSS, GameReview, judge_move, review_game
from battleline_rules import (
    GameRecord,
    GameState,
    Kind,
    format_action,
    new_game,
    parse_action,
    record_of,
)

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
            assert len(legal) == 1 or parse_action(move.action).kind in (Kind.DRAW,
                                                                          Kind.SCOUT_DRAW)
            continue
        judged += 1
        preferred = parse_action(move.preferred)
        assert preferred in legal and preferred.kind not in (Kind.DRAW, Kind.SCOUT_DRAW)
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
