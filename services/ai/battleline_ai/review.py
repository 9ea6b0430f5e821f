"""The post-game review: every move of a finished game judged by the hosted AI's eye.

For each move: the mover's win estimate just before it and just after it, the
move the AI preferred, and what the move played gave up against it (its loss);
then the few costliest moves. A chess server's review, with two differences
that Battle Line forces:

- No peeking. Each judgement is made from the mover's view at that moment
  (its hand, the board, the discards, the cards it put back with Scout), never
  from cards revealed later or the opponent's hand: `judge_move` reads the
  states it is given only through ``view(mover)``, and plays alternatives on a
  world sampled from that view. A draw's "after" knows the drawn card, as the
  mover did once it had drawn.
- Luck is not a mistake. A draw reveals a card, so its estimate moves with
  luck; draws are shown but not judged (no preferred move, no loss). Every
  other move reveals nothing to its mover, so its loss is exact under the
  evaluator: the estimate after the AI's preferred move minus the estimate
  after the move played, both from what the mover knew then.
- Claims are not judged either, nor judge others: every one of our bots claims
  as soon as it can (a proven flag stays proven), and the evaluator weighs a
  claimed flag by 1 where an open decisive one weighs more, so it would call
  a claim a small loss.

The evaluator is level 5's leaf, `odds.seen_position_value` (exact formation
odds, one ply, no search), and the candidates are the move played plus `prob`'s
best few (`TOP_CANDIDATES`): a whole game costs about a second of one core
(benchmarks in tests/ai/test_review.py), so a review fits in the AI service's
search pool beside the games.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from battleline_rules import (
    RULESETS,
    Action,
    GameRecord,
    GameState,
    Kind,
    Options,
    Phase,
    RuleError,
    format_action,
    new_game,
    parse_action,
)
from battleline_rules.rulesets import validate_options

from .heuristic import ranked_plays
from .odds import seen_position_value
from .prob import OddsBoard

# prob's best plays judged besides the move played (a held Traitor offers ~200 plays).
TOP_CANDIDATES = 6
# The costliest moves listed; a move that lost under this much is no mistake.
COSTLIEST = 3
MIN_LOSS = 0.005
# What the review's figures are, for its readers.
EVALUATOR = (f"level 5's leaf (exact formation odds, no search) from the mover's view; "
             f"candidates: prob's best {TOP_CANDIDATES} plays and the move played")
# A game has about 60-130 actions; this bounds a record sent to the review.
MAX_ACTIONS = 2000
# Any seed: a view's estimate does not depend on the world sampled from it (the tests pin it).
_WORLD_SEED = 0
_UNJUDGED = (Kind.DRAW, Kind.SCOUT_DRAW, Kind.CLAIM)  # luck, and claims (see above)


@dataclass(frozen=True, slots=True)
class MoveReview:
    """One move as its mover saw it. ``preferred`` is "" (and ``loss`` 0) for a move
    that was not judged: forced (no other legal action), a draw or a claim."""

    index: int  # the move's place in the game's action list, from 0
    seat: int
    action: str
    before: float  # the mover's win estimate just before the move, 0..1
    after: float  # and just after it
    preferred: str  # the AI's preferred move in that position
    loss: float  # estimate after `preferred` minus estimate after the move played, >= 0


@dataclass(frozen=True, slots=True)
class GameReview:
    """Every move's judgement, and the costliest ones (indexes into ``moves``)."""

    moves: tuple[MoveReview, ...]
    costliest: tuple[int, ...]  # largest loss first


def estimate(view: GameState, seat: int) -> float:
    """``seat``'s win estimate from its view: level 5's leaf on a world sampled from it
    (`seen_position_value` reads a world only through its view again)."""
    return seen_position_value(view.sample_world(random.Random(_WORLD_SEED)), seat)


def candidates(view: GameState, played: Action) -> list[Action]:
    """The moves judged against ``played``: prob's best plays (the PLAY step) or every
    move but draws and claims (the later steps: few), and ``played``."""
    actions = [a for a in view.legal_actions() if a.kind not in _UNJUDGED]
    if view.phase is Phase.PLAY:
        board = OddsBoard(view, view.current_player)
        actions = [a for _, a in ranked_plays(board, actions)[:TOP_CANDIDATES]]
    if played not in actions:
        actions.append(played)
    return actions


def judge_move(before: GameState, action: Action, after: GameState, index: int = 0) -> MoveReview:
    """Judge ``action``, played in ``before`` and giving ``after``, from its mover's view.

    Both states are read only through ``view(mover)``: swapping the opponent's
    hidden cards for others consistent with that view changes nothing.
    """
    seat = before.current_player
    view = before.view(seat)
    value_before = estimate(view, seat)
    value_after = estimate(after.view(seat), seat)
    text = format_action(action)
    legal = view.legal_actions()
    if len(legal) < 2 or action.kind in _UNJUDGED:
        return MoveReview(index, seat, text, value_before, value_after, "", 0.0)
    world = view.sample_world(random.Random(_WORLD_SEED))
    best, best_value = action, value_after
    for candidate in candidates(view, action):
        if candidate == action:
            continue
        trial = world.clone()
        trial.apply(candidate)
        value = seen_position_value(trial, seat)
        if value > best_value:
            best, best_value = candidate, value
    return MoveReview(index, seat, text, value_before, value_after, format_action(best),
                      best_value - value_after)


def review_game(record: GameRecord, costliest: int = COSTLIEST) -> GameReview:
    """Replay ``record`` and judge every move; the ``costliest`` moves that lost at
    least `MIN_LOSS`, largest loss first (earlier first among equals)."""
    state = new_game(record.ruleset, record.options, record.seed)
    moves = []
    for index, text in enumerate(record.actions):
        action = parse_action(text)
        before = state.clone()
        state.apply(action)
        moves.append(judge_move(before, action, state, index))
    ranked = sorted((m for m in moves if m.loss >= MIN_LOSS), key=lambda m: (-m.loss, m.index))
    return GameReview(tuple(moves), tuple(m.index for m in ranked[:costliest]))


def review_record(ruleset: str, options: str, seed: int, actions: list[str]) -> GameReview:
    """`review_game` from a record's plain parts (what the AI service's pool runs);
    a record that does not replay raises ValueError saying why."""
    if ruleset not in RULESETS:
        raise ValueError(f"unknown ruleset {ruleset!r}: use {', '.join(RULESETS)}")
    if len(actions) > MAX_ACTIONS:
        raise ValueError(f"at most {MAX_ACTIONS} actions, not {len(actions)}")
    parsed = Options.parse(options.split())
    validate_options(RULESETS[ruleset], parsed)
    try:
        return review_game(GameRecord(ruleset, parsed, seed, actions))
    except RuleError as err:
        raise ValueError(f"the record does not replay: {err}") from None
