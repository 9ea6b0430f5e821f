"""Claim proofs cross-checked against brute-force enumeration.

`decide_claim` must grant a claim exactly when no completion of the
opponent's side beats the claimant, and `best_formation` must find the same
strength as enumerating every completion (`brute_force_best`). Positions come
from random games in every ruleset (standard games steered so that Fog, Mud
and the morale tactics get played) and from flags built directly with the
rarer combinations (a Leader, Cavalry and Shield Bearers on one side of a
Mud flag). Totals go to stdout (``pytest -s``) and into assertion messages.
"""

from __future__ import annotations

import random
from collections import Counter
from math import comb, prod

from battleline_rules import (
    Action,
    GameState,
    Kind,
    Ruleset,
    best_formation,
    brute_force_best,
    decide_claim,
    dump_position,
    new_game,
)
from battleline_rules.board import UNCLAIMED, Flag
from battleline_rules.cards import CARD_COUNT, ENVIRONMENT, LEADERS, MORALE, Tactic, card_name
from battleline_rules.rulesets import RULESETS

# Completions x morale assignments brute force may enumerate for one question
# (~4 us each). Larger questions (an empty side early in the game) are
# counted as skipped; the constructed flags cover them with smaller pools.
MAX_BRUTE_COST = 60_000
WILD_CHOICES: dict[int, int] = {
    Tactic.ALEXANDER: 60,
    Tactic.DARIUS: 60,
    Tactic.CAVALRY: 6,
    Tactic.SHIELD: 18,
}

GAME_POSITIONS_MIN = 10_000
FEATURE_MIN = 300  # positions with Mud, with Fog, with a morale tactic (standard)


def brute_cost(cards: list[int], missing: int, available: int) -> int:
    """How many formations `brute_force_best` will classify for this question."""
    wilds = prod(WILD_CHOICES.get(c, 1) for c in cards)
    return comb(available.bit_count(), missing) * wilds


class Checker:
    """Compares proofs with brute force, memoising brute force and counting what it saw."""

    def __init__(self) -> None:
        self.brute: dict[tuple[str, tuple[int, ...], int, int, bool], int | None] = {}
        self.seen: set[tuple[object, ...]] = set()
        self.counts: Counter[str] = Counter()
        self.disagreements: list[str] = []
        self.state: GameState | None = None  # the position being checked, for failure reports

    def brute_best(
        self, ruleset: Ruleset, cards: list[int], missing: int, available: int, fog: bool
    ) -> int | None:
        available &= ruleset.troop_mask
        key = (ruleset.name, tuple(sorted(cards)), missing, available, fog)
        if key not in self.brute:
            self.brute[key] = brute_force_best(ruleset, cards, missing, available, fog)
        return self.brute[key]

    def fail(self, what: str, context: str) -> None:
        position = "" if self.state is None else dump_position(self.state)
        self.disagreements.append(f"{what}\n{context}\n{position}")

    def check_flag(
        self,
        ruleset: Ruleset,
        flag: Flag,
        index: int,
        seat: int,
        available: int,
        context: str,
        state: GameState | None = None,
    ) -> None:
        """Check one claim question: ``seat`` claims flag ``index`` given ``available``."""
        mine, theirs = flag.cards[seat], flag.cards[1 - seat]
        size, fog = flag.size, flag.fog
        if flag.claimed != UNCLAIMED or len(mine) != size or len(theirs) > size:
            return  # a side over size only waits for Mud's discard: tests/rules/test_claims.py
        complete = len(theirs) == size
        missing = size - len(theirs)
        avail = available & ruleset.troop_mask
        key = (
            ruleset.name,
            tuple(sorted(mine)),
            tuple(sorted(theirs)),
            size,
            fog,
            # Completion order matters only between complete sides, availability only otherwise.
            flag.completed_at(seat) < flag.completed_at(1 - seat) if complete else avail,
        )
        if key in self.seen:
            return
        empty_rule = not theirs and ruleset.empty_side_loses
        if not complete and not empty_rule and brute_cost(theirs, missing, avail) > MAX_BRUTE_COST:
            self.counts["skipped (brute force too costly)"] += 1
            return
        self.seen.add(key)
        where = f"{context}: flag {index + 1}, seat {seat} claims"
        verdict = decide_claim(ruleset, flag, index, seat, available)
        my_strength = self.brute_best(ruleset, mine, 0, 0, fog)
        assert my_strength is not None
        formed = best_formation(ruleset, mine, 0, 0, fog)
        if formed is None or formed.strength != my_strength:
            self.fail(f"{where}: complete side {formed} != brute {my_strength}", context)
        if complete:
            their_strength = self.brute_best(ruleset, theirs, 0, 0, fog)
            assert their_strength is not None
            expected = my_strength > their_strength or (
                my_strength == their_strength
                and flag.completed_at(seat) < flag.completed_at(1 - seat)
            )
            self.counts["complete vs complete"] += 1
        elif empty_rule:
            expected = True
            self.counts["deck52 empty side"] += 1
            if brute_cost(theirs, missing, avail) <= MAX_BRUTE_COST:
                self.check_best(ruleset, theirs, missing, avail, fog, where)
        else:
            best = self.check_best(ruleset, theirs, missing, avail, fog, where)
            expected = best is None or best <= my_strength
            self.counts["complete vs incomplete"] += 1
            self.counts[f"opponent has {len(theirs)} of {size}"] += 1
            if not verdict.granted:
                self.check_refutation(ruleset, theirs, avail, fog, verdict.refutation, my_strength)
        if verdict.granted != expected:
            self.fail(f"{where}: proof says {verdict.granted}, brute force {expected}", context)
        if state is not None:
            cached = state.claim_verdict(index, seat).granted
            if cached != expected:
                self.fail(f"{where}: state.claim_verdict {cached}, brute force {expected}", context)
            offered = Action(Kind.CLAIM, flag=index) in state.legal_actions()
            if state.current_player == seat and state.claims_allowed() and offered != expected:
                self.fail(f"{where}: legal_actions offers claim {offered} != {expected}", context)
        self.counts["positions"] += 1
        self.counts[f"positions {ruleset.name}"] += 1
        self.counts["granted" if expected else "refused"] += 1
        every = mine + theirs
        if size == 4:
            self.counts["with mud"] += 1
        if fog:
            self.counts["with fog"] += 1
        if any(c in MORALE for c in every):
            self.counts["with morale"] += 1

    def check_best(
        self, ruleset: Ruleset, cards: list[int], missing: int, avail: int, fog: bool, where: str
    ) -> int | None:
        """best_formation agrees with brute force, and its completion really reaches it."""
        brute = self.brute_best(ruleset, cards, missing, avail, fog)
        found = best_formation(ruleset, cards, missing, avail, fog)
        strength = None if found is None else found.strength
        if strength != brute:
            self.fail(f"{where}: best_formation {found} != brute {brute}", where)
        if found is not None:
            added = found.added
            ok = len(set(added)) == missing and all(avail >> c & 1 for c in added)
            reached = self.brute_best(ruleset, [*cards, *added], 0, 0, fog) if ok else None
            if reached != found.strength:
                self.fail(f"{where}: completion {added} reaches {reached}, not {found}", where)
        return brute

    def check_refutation(
        self,
        ruleset: Ruleset,
        theirs: list[int],
        avail: int,
        fog: bool,
        refutation: tuple[int, ...],
        my_strength: int,
    ) -> None:
        """A refused claim names unseen cards that complete the side and beat the claimant."""
        ok = all(avail >> c & 1 for c in refutation) and len(set(refutation)) == len(refutation)
        reached = self.brute_best(ruleset, [*theirs, *refutation], 0, 0, fog) if ok else None
        if reached is None or reached <= my_strength:
            self.fail(f"refutation {refutation} reaches {reached} vs {my_strength}", "")

    def check_state(self, state: GameState, context: str) -> None:
        self.state = state
        for index, flag in enumerate(state.flags):
            for seat in (0, 1):
                self.check_cached(state, index, seat, context)
                self.check_flag(state.ruleset, flag, index, seat, state.available, context, state)
        self.state = None

    def check_cached(self, state: GameState, index: int, seat: int, context: str) -> None:
        """The state's cached verdict is the fresh decision, explanation included."""
        cached = state.claim_verdict(index, seat)
        fresh = decide_claim(state.ruleset, state.flags[index], index, seat, state.available)
        self.counts["cached verdicts compared"] += 1
        if cached != fresh:
            self.fail(f"flag {index + 1}, seat {seat}: cached {cached.reason!r}, "
                      f"fresh {fresh.reason!r}", context)

    def report(self, title: str) -> str:
        lines = [f"{title}:"] + [f"  {k}: {v}" for k, v in sorted(self.counts.items())]
        lines.append(f"  disagreements: {len(self.disagreements)}")
        return "\n".join(lines)


def steer(state: GameState, rng: random.Random) -> Action:
    """Random play that gets Fog, Mud and the morale tactics onto the table.

    Tactics draws and tactic plays are preferred; otherwise uniform.
    """
    legal = state.legal_actions()
    tactic_plays = [
        a for a in legal if a.kind is Kind.PLAY and (a.card in MORALE or a.card in ENVIRONMENT)
    ]
    if tactic_plays and rng.random() < 0.8:
        return rng.choice(tactic_plays)
    tactic_draws = [a for a in legal if a.kind is Kind.DRAW and a.deck == 1]
    if tactic_draws and rng.random() < 0.6:
        return tactic_draws[0]
    return rng.choice(legal)


def crosscheck_games(checker: Checker, ruleset: str, games: int, rate: float, seed: int) -> None:
    """Play ``games`` random games, checking the flags of a ``rate`` share of positions."""
    rng = random.Random(seed)
    for _ in range(games):
        game_seed = rng.getrandbits(48)
        state = new_game(ruleset, None, game_seed)
        ply = 0
        while not state.is_over:
            if rng.random() < rate:
                checker.check_state(state, f"{ruleset} seed {game_seed} action {ply}")
            state.apply_unchecked(steer(state, rng))
            ply += 1


def test_claims_match_brute_force_in_random_games() -> None:
    """0 disagreements on >= 10,000 claim positions from random games of every ruleset."""
    checker = Checker()
    crosscheck_games(checker, "standard", 90, 0.5, seed=1)
    crosscheck_games(checker, "basic", 50, 0.5, seed=2)
    crosscheck_games(checker, "deck52", 120, 0.5, seed=3)
    summary = checker.report("claim cross-check, random games")
    print(summary)
    counts = checker.counts
    assert not checker.disagreements, summary + "\n" + "\n".join(checker.disagreements[:10])
    assert counts["positions"] >= GAME_POSITIONS_MIN, summary
    for ruleset in ("standard", "basic", "deck52"):
        assert counts[f"positions {ruleset}"] >= 1000, summary
    for feature in ("with mud", "with fog", "with morale"):
        assert counts[feature] >= FEATURE_MIN, summary
    assert counts["granted"] >= 1000 and counts["refused"] >= 1000, summary


def describe_flag(flag: Flag, available: int) -> str:
    """A built flag in words, enough to rebuild it in a unit test."""
    sides = [
        " ".join(f"{card_name(c)}#{n}" for c, n in zip(flag.cards[s], flag.seqs[s], strict=True))
        for s in (0, 1)
    ]
    env = " ".join(card_name(c) for c, _ in flag.env) or "-"
    pool = " ".join(card_name(c) for c in range(CARD_COUNT) if available >> c & 1)
    return f"flag: {sides[0]} | {sides[1]} | {env}; unseen: {pool}"


def random_flag(rng: random.Random, ruleset: Ruleset) -> tuple[Flag, int, int]:
    """A flag built directly: Mud/Fog at random, morale cards, and a small unseen pool."""
    flag = Flag()
    if ruleset.tactics:
        if rng.random() < 0.5:
            flag.add_env(Tactic.MUD, rng.randrange(2))
        if rng.random() < 0.4:
            flag.add_env(Tactic.FOG, rng.randrange(2))
    troops = list(ruleset.troops)
    rng.shuffle(troops)
    # Each seat plays at most one Leader; Cavalry and Shield exist once.
    morale: list[int] = [
        Tactic.CAVALRY,
        Tactic.SHIELD,
        *rng.sample([Tactic.ALEXANDER, Tactic.DARIUS], 2),
    ]
    leaders_used = [False, False]
    claimant = rng.randrange(2)
    counts = {claimant: flag.size, 1 - claimant: rng.randrange(flag.size + 1)}
    seq = 0
    for seat in rng.sample((0, 1), 2):
        for _ in range(counts[seat]):
            card = troops.pop()
            allowed = [m for m in morale if not (m in LEADERS and leaders_used[seat])]
            if ruleset.tactics and allowed and rng.random() < 0.35:
                card = rng.choice(allowed)
                morale.remove(card)
                leaders_used[seat] |= card in LEADERS
            seq += 1
            flag.place(seat, card, seq)
    # The unseen pool: troops not on the flag, thinned so that brute force stays quick.
    available = 0
    for card in troops[: rng.randrange(6, 26)]:
        available |= 1 << card
    return flag, claimant, available


def test_claims_match_brute_force_on_built_flags() -> None:
    """Rare combinations (several morale cards, Mud with Fog, empty sides) built directly."""
    checker = Checker()
    rng = random.Random(7)
    for ruleset_name, count in (("standard", 3000), ("basic", 600), ("deck52", 600)):
        ruleset = RULESETS[ruleset_name]
        for _ in range(count):
            flag, seat, available = random_flag(rng, ruleset)
            checker.check_flag(ruleset, flag, 0, seat, available, describe_flag(flag, available))
    summary = checker.report("claim cross-check, built flags")
    print(summary)
    assert not checker.disagreements, summary + "\n" + "\n".join(checker.disagreements[:10])
    assert checker.counts["positions"] >= 3000, summary
    for feature in ("with mud", "with fog", "with morale"):
        assert checker.counts[feature] >= FEATURE_MIN, summary
