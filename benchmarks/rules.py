"""Rules-core benchmarks: random games, legal actions, apply, claim proofs vs brute force.

Run ``python benchmarks/rules.py`` (about two minutes) or ``--quick`` (about
20 s). Prints one ``name: value`` line per figure. The machine is shared and
noisy, so every timing is the best of several repeats, and a fixed
pure-Python workload (``baseline_loop_per_s``) is timed in the same process:
``standard_games_vs_baseline`` compares runs across machines and loads better
than raw games per second.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from battleline_client.loadtest import percentile
from battleline_rules import (
    Action,
    ClaimTiming,
    GameState,
    Options,
    Ruleset,
    brute_force_best,
    decide_claim,
    is_compiled,
    new_game,
)
from battleline_rules.board import UNCLAIMED, Flag


@dataclass(frozen=True)
class Plan:
    """How much work each figure gets."""

    repeats: int
    games: int  # per repeat, per ruleset
    positions_games: int  # games sampled for legal-action / apply positions
    claim_positions: int  # flags timed for claim proof vs brute force
    brute_repeats: int
    baseline_loops: int


FULL = Plan(
    repeats=5,
    games=300,
    positions_games=40,
    claim_positions=400,
    brute_repeats=3,
    baseline_loops=100,
)
QUICK = Plan(
    repeats=3,
    games=120,
    positions_games=15,
    claim_positions=150,
    brute_repeats=2,
    baseline_loops=60,
)


def best_of(repeats: int, run: Callable[[], float]) -> float:
    """Smallest time over ``repeats`` runs: noise only ever adds time."""
    return min(run() for _ in range(repeats))


# ---------------------------------------------------------------- baseline


def baseline_loop() -> int:
    """A fixed pure-Python workload shaped like game code: ints, lists, dicts, branches.

    Its speed tracks the interpreter and the machine's current load, not the
    rules core, so it normalises the game figures.
    """
    x = 12345
    hand: list[int] = []
    seen: dict[int, int] = {}
    total = 0
    for _ in range(20_000):
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        card = x % 60
        if len(hand) < 7:
            hand.append(card)
        else:
            total += hand.pop(x % 7)
        seen[card] = seen.get(card, 0) + 1
        if card & 1 and card in seen:
            total ^= card
    return total + len(seen)


def time_baseline(plan: Plan) -> float:
    def run() -> float:
        start = time.perf_counter()
        for _ in range(plan.baseline_loops):
            baseline_loop()
        return time.perf_counter() - start

    return plan.baseline_loops / best_of(plan.repeats, run)


# ------------------------------------------------------------ random games


def play_random(ruleset: str, options: Options | None, seed: int) -> int:
    """One game of uniformly random legal actions; returns the number of actions.

    `random_action` draws from the same distribution as choosing from
    `legal_actions()`, without listing every troop placement.
    """
    state = new_game(ruleset, options, seed)
    rng = random.Random(seed)
    actions = 0
    while not state.is_over:
        state.apply_unchecked(state.random_action(rng))
        actions += 1
    return actions


def time_games(plan: Plan, ruleset: str, options: Options | None = None) -> tuple[float, float]:
    """(games per second, actions per second), the same seeds every repeat."""
    actions = 0

    def run() -> float:
        nonlocal actions
        actions = 0
        start = time.perf_counter()
        for seed in range(plan.games):
            actions += play_random(ruleset, options, seed)
        return time.perf_counter() - start

    elapsed = best_of(plan.repeats, run)
    return plan.games / elapsed, actions / elapsed


# ------------------------------------------------- legal actions and apply


def sample_positions(plan: Plan) -> list[tuple[GameState, Action]]:
    """Every position of some random standard games, with the action taken there.

    Each is cloned right after an action was applied, so its legal-action
    list is not yet generated (as in search, where every node is new).
    """
    positions = []
    for seed in range(1000, 1000 + plan.positions_games):
        state = new_game("standard", None, seed)
        rng = random.Random(seed)
        while not state.is_over:
            fresh = state.clone()
            action = rng.choice(state.legal_actions())
            positions.append((fresh, action))
            state.apply_unchecked(action)
    return positions


def time_per_position(
    plan: Plan,
    positions: list[tuple[GameState, Action]],
    step: Callable[[GameState, Action], object],
) -> float:
    """Calls per second of ``step`` on fresh clones of every position."""

    def run() -> float:
        states = [(s.clone(), a) for s, a in positions]
        start = time.perf_counter()
        for state, action in states:
            step(state, action)
        return time.perf_counter() - start

    return len(positions) / best_of(plan.repeats, run)


# ------------------------------------------------------------ claim proofs


def claim_questions(plan: Plan) -> list[tuple[Ruleset, Flag, int, int, int]]:
    """Standard flags where one side is complete and the opponent has at most one card.

    Taken from random games, one question per flag and game so they spread
    over the whole game rather than repeat one flag.
    """
    questions: list[tuple[Ruleset, Flag, int, int, int]] = []
    seed = 5000
    while len(questions) < plan.claim_positions:
        state = new_game("standard", None, seed)
        rng = random.Random(seed)
        asked: set[tuple[int, int]] = set()
        while not state.is_over and len(questions) < plan.claim_positions:
            for index, flag in enumerate(state.flags):
                for seat in (0, 1):
                    if (
                        (index, seat) not in asked
                        and flag.claimed == UNCLAIMED
                        and len(flag.cards[seat]) == flag.size
                        and len(flag.cards[1 - seat]) <= 1
                    ):
                        asked.add((index, seat))
                        questions.append((state.ruleset, flag.copy(), index, seat, state.available))
            state.apply_unchecked(rng.choice(state.legal_actions()))
        seed += 1
    return questions[: plan.claim_positions]


def brute_force_claim(ruleset: Ruleset, flag: Flag, seat: int, available: int) -> bool:
    """The claim decided by enumeration: granted iff no completion beats the claimant."""
    fog, mine, theirs = flag.fog, flag.cards[seat], flag.cards[1 - seat]
    strength = brute_force_best(ruleset, mine, 0, 0, fog)
    assert strength is not None
    if not theirs and ruleset.empty_side_loses:
        return True
    best = brute_force_best(ruleset, theirs, flag.size - len(theirs), available, fog)
    return best is None or best <= strength


def time_one(repeats: int, call: Callable[[], object]) -> float:
    """Best-of-``repeats`` seconds for a single call (a few calls batched when very quick)."""
    start = time.perf_counter()
    call()
    once = time.perf_counter() - start
    batch = max(1, min(1000, int(1e-3 / max(once, 1e-7))))
    best = once
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(batch):
            call()
        best = min(best, (time.perf_counter() - start) / batch)
    return best


def time_claims(plan: Plan) -> dict[str, float]:
    """Proof and brute force on the same questions, with a check that they agree."""
    proof_times, brute_times = [], []
    for ruleset, flag, index, seat, available in claim_questions(plan):
        proof = decide_claim(ruleset, flag, index, seat, available).granted
        if proof != brute_force_claim(ruleset, flag, seat, available):
            raise AssertionError(f"proof and brute force disagree on flag {index + 1}")
        prove = partial(decide_claim, ruleset, flag, index, seat, available)
        brute = partial(brute_force_claim, ruleset, flag, seat, available)
        proof_times.append(time_one(plan.repeats * 4, prove))
        brute_times.append(time_one(plan.brute_repeats, brute))
    proof_median = statistics.median(proof_times)
    brute_median = statistics.median(brute_times)
    return {
        "claim_positions": len(proof_times),
        "claim_proof_median_us": proof_median * 1e6,
        "claim_proof_p99_us": percentile(sorted(proof_times), 99) * 1e6,
        "brute_force_median_us": brute_median * 1e6,
        "brute_force_p99_us": percentile(sorted(brute_times), 99) * 1e6,
        "claim_proof_speedup_median": brute_median / proof_median,
    }


# -------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short run (about 20 s)")
    args = parser.parse_args(argv)
    plan = QUICK if args.quick else FULL

    def emit(name: str, value: float) -> None:
        text = f"{value:.0f}" if abs(value) >= 100 else f"{value:.3g}"
        print(f"{name}: {text}", flush=True)

    emit("rules_core_compiled", int(is_compiled()))  # setup.py: mypyc, unless installed pure
    play_random("standard", None, 0)  # warm caches and the interpreter
    baseline_start = time_baseline(plan)
    standard, standard_actions = time_games(plan, "standard")
    emit("standard_random_games_per_s", standard)
    emit("standard_random_actions_per_s", standard_actions)
    emit("basic_random_games_per_s", time_games(plan, "basic")[0])
    emit("deck52_random_games_per_s", time_games(plan, "deck52")[0])
    start_of_turn = Options(claim_timing=ClaimTiming.START_OF_TURN)
    emit(
        "standard_start_of_turn_random_games_per_s", time_games(plan, "standard", start_of_turn)[0]
    )

    positions = sample_positions(plan)
    emit("legal_actions_per_s", time_per_position(plan, positions, lambda s, a: s.legal_actions()))
    emit("apply_per_s", time_per_position(plan, positions, lambda s, a: s.apply_unchecked(a)))
    emit("apply_checked_per_s", time_per_position(plan, positions, lambda s, a: s.apply(a)))

    for name, value in time_claims(plan).items():
        emit(name, value)
    # The baseline is timed at the start and the end; the best of both counts,
    # and a large gap between them says the machine's load changed mid-run.
    baseline_end = time_baseline(plan)
    baseline = max(baseline_start, baseline_end)
    emit("baseline_loop_per_s", baseline)
    emit("baseline_load_drift", baseline_end / baseline_start)
    emit("standard_games_vs_baseline", standard / baseline)


if __name__ == "__main__":
    main()
