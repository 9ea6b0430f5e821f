"""Every bot plays only legal actions, from its view only, over complete games."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from battleline_ai import make_bot
from battleline_ai.bots import Bot
from battleline_ai.heuristic import HeuristicBot
from battleline_ai.ismcts import IsmctsBot
from battleline_ai.prob import prob_policy
from battleline_rules import RULESETS, ClaimTiming, GameState, Options, new_game

SPECS = [
    "random",
    "heuristic",
    "heuristic:noise=0.3",
    "prob",
    "ismcts:iterations=15,depth=2",
    "ismcts:iterations=15,depth=0,leaf=seen,rank=prob",
    "ismcts:iterations=15,depth=0,leaf=seen,rank=prob,margin=0.001",
    "ismcts:iterations=15,depth=0,leaf=odds,rank=prob,margin=0.001",
    "ismcts:iterations=15,depth=2,leaf=seen,rank=prob,margin=0.001,rollout=prob",
]


def play_checked(bots: tuple[Bot, Bot], state: GameState, seed: int) -> GameState:
    """Play to the end, asserting each choice is in the legal list of the real state."""
    rngs = [random.Random(seed), random.Random(seed + 1)]
    while not state.is_over:
        seat = state.current_player
        action = bots[seat].choose(state.view(seat), rngs[seat])
        assert action in state.legal_actions(), (action, state.phase)
        state.apply(action)
    return state


@pytest.mark.parametrize("ruleset", sorted(RULESETS))
@pytest.mark.parametrize("spec", SPECS)
def test_bot_plays_legal_complete_games(ruleset: str, spec: str) -> None:
    bot, opponent = make_bot(spec), make_bot("heuristic")
    for game in range(2):
        state = new_game(ruleset, None, 1000 + game)
        bots = (bot, opponent) if game % 2 == 0 else (opponent, bot)
        assert play_checked(bots, state, game).is_over


def test_bots_play_start_of_turn_claims() -> None:
    options = Options(claim_timing=ClaimTiming.START_OF_TURN)
    bots = (make_bot("heuristic"), make_bot("ismcts:iterations=10,depth=2"))
    assert play_checked(bots, new_game("standard", options, 7), 7).is_over


def test_noise_plays_cards_at_random_and_draws_as_the_heuristic() -> None:
    """Level 1 (60% noise) drew at random too: it filled its hand with seven tactics it
    could not play and the game ended in a stalemate with troops left in the deck. Noise
    now picks only among the card plays; every other decision is the heuristic's."""
    noisy, plain = HeuristicBot(noise=1.0), HeuristicBot()
    steps = {"PLAY": 0, "other": 0}
    random_plays = 0
    for seed in range(3):
        state = new_game("standard", None, seed)
        rng = random.Random(seed)
        while not state.is_over:
            view = state.view(state.current_player)
            action = noisy.choose(view, rng)
            if view.phase.name == "PLAY":
                steps["PLAY"] += 1
                random_plays += action != plain.choose(view, random.Random(0))
            else:
                steps["other"] += 1
                assert action == plain.choose(view, random.Random(0)), view.phase
            state.apply(action)
    assert steps["other"] > 50 and random_plays > steps["PLAY"] // 2, (steps, random_plays)


def test_heuristic_always_claims_first() -> None:
    """Whenever a claim is legal, the heuristic claims before anything else."""
    bot, rng = HeuristicBot(), random.Random(3)
    claims_seen = 0
    for seed in range(4):
        state = new_game("standard", None, seed)
        while not state.is_over:
            seat = state.current_player
            legal = state.legal_actions()
            action = bot.choose(state.view(seat), rng)
            if any(a.kind.name == "CLAIM" for a in legal):
                claims_seen += 1
                assert action.kind.name == "CLAIM"
            state.apply(action)
    assert claims_seen > 0


def choices_in_a_game(seed: int, rng_seed: int, count: int) -> Iterator[GameState]:
    """The first ``count`` PLAY steps with a choice in a seeded heuristic self-play game,
    each handed out before the heuristic moves on from it."""
    helper, rng = HeuristicBot(), random.Random(rng_seed)
    state = new_game("standard", None, seed)
    found = 0
    while not state.is_over and found < count:
        seat = state.current_player
        if state.phase.name == "PLAY" and len(state.legal_actions()) > 1:
            yield state
            found += 1
        state.apply(helper.choose(state.view(seat), rng))


@pytest.mark.parametrize(
    "knobs",
    [
        {"iterations": "60"},
        {"iterations": "60", "leaf": "seen", "rank": "prob", "depth": "0"},
        {"iterations": "60", "leaf": "odds", "rank": "prob", "depth": "0"},
        {"iterations": "30", "leaf": "seen", "rank": "prob", "depth": "2", "rollout": "prob"},
    ],
)
def test_ismcts_decides_from_the_view_alone(knobs: dict[str, str]) -> None:
    """Two real states that look the same to the seat get the same move (same seed)."""
    bot = IsmctsBot.from_knobs(knobs)
    compared = 0
    for state in choices_in_a_game(seed=11, rng_seed=5, count=4):
        seat = state.current_player
        view = state.view(seat)
        twin = view.sample_world(random.Random(compared))  # other hidden cards, same view
        assert twin.view(seat).legal_actions() == view.legal_actions()
        mine = bot.choose(view, random.Random(99))
        theirs = bot.choose(twin.view(seat), random.Random(99))
        assert mine == theirs
        compared += 1
    assert compared == 4


@pytest.mark.parametrize(
    "spec",
    [
        "nope",
        "random:x=1",
        "heuristic:depth=2",
        "prob:noise",
        "ismcts:level=9",
        "ismcts:foo=1",
        "ismcts:c",
        "ismcts:leaf=peek",
        "ismcts:rank=oracle",
        "ismcts:rollout=oracle",
    ],
)
def test_bad_specs_are_refused(spec: str) -> None:
    with pytest.raises(ValueError):
        make_bot(spec)


def test_level_specs_build() -> None:
    from battleline_ai.bots import LEVELS

    for level in LEVELS:
        bot = make_bot(f"ismcts:level={level}")
        assert bot.name in ("ismcts", "prob", "heuristic")


def test_prob_rollouts_decide_from_the_movers_view_alone() -> None:
    """In a rollout, `prob` plays each seat from that seat's view of the sampled world:
    worlds that differ only in the other seat's hidden cards get the same move."""
    compared = 0
    for state in choices_in_a_game(seed=21, rng_seed=8, count=6):
        seat = state.current_player
        # The mover's view, dealt again: the other seat's hand and the decks change.
        twin = state.view(seat).sample_world(random.Random(compared))
        assert twin.hands[1 - seat] != state.hands[1 - seat]
        assert prob_policy(state, random.Random(4)) == prob_policy(twin, random.Random(4))
        compared += 1
    assert compared == 6
