"""The exact formation odds behind `prob` and the search's leaf: by hand, and by brute force.

A side gets ``draws`` cards drawn uniformly from the unseen ``pool``; the
odds of each category are checked against counts worked out by hand and
against enumerating every possible set of draws on small random positions.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from itertools import combinations, pairwise
from math import comb

import pytest

from battleline_ai import odds
from battleline_ai.bots import make_bot
from battleline_ai.odds import (
    FlagOdds,
    Supply,
    assign_hand,
    kept_after_discard,
    position_value,
    seen_position_value,
    side_outlook,
    win_probability,
)
from battleline_ai.prob import ProbBot
from battleline_rules import RULESETS, GameState, best_formation, new_game, parse_card
from battleline_rules.cards import COLOUR, VALUE, Tactic, mask_of
from battleline_rules.rulesets import Category
from tests.rules.positions import position

STANDARD = RULESETS["standard"]
WEDGE, PHALANX, BATTALION, SKIRMISH, HOST = range(5)


def cards(text: str) -> list[int]:
    return [parse_card(t) for t in text.split()]


def pool_of(named: str, filler: int, exclude: list[int]) -> int:
    """A pool holding the named cards plus ``filler`` troops unrelated to the test side."""
    mask = mask_of(cards(named))
    spare = [c for c in STANDARD.troops if COLOUR[c] in (4, 5) and c not in exclude]
    for card in spare[:filler]:
        mask |= 1 << card
    return mask


def reach(outlook: tuple[tuple[float, tuple[tuple[int, float], ...]], ...], index: int) -> float:
    return outlook[index][0]


def test_one_named_card_with_k_draws_left() -> None:
    side = cards("R9 R10")
    pool = pool_of("R8", 19, side)  # 20 unseen cards, R8 among them
    for k in (0, 1, 3, 7):
        outlook = side_outlook(STANDARD, side, 3, False, Supply(0, pool, k))
        assert reach(outlook, WEDGE) == pytest.approx(k / 20)
        # Its one target is the wedge 8-9-10.
        assert [t for t, _ in outlook[WEDGE][1]] == ([27] if k else [])


def test_a_wedge_that_needs_two_cards() -> None:
    side = cards("R1")  # only the window 1-2-3 holds R1
    pool = pool_of("R2 R3", 14, side)
    n = 16
    for k in (1, 2, 5):
        outlook = side_outlook(STANDARD, side, 3, False, Supply(0, pool, k))
        assert reach(outlook, WEDGE) == pytest.approx(k * (k - 1) / (n * (n - 1)))


def test_a_card_in_hand_is_certain() -> None:
    side = cards("R1")
    pool = pool_of("R3", 9, side)
    outlook = side_outlook(STANDARD, side, 3, False, Supply(mask_of(cards("R2")), pool, 2))
    assert reach(outlook, WEDGE) == pytest.approx(2 / 10)


def test_mud_needs_four_and_either_end_will_do() -> None:
    side = cards("R7 R8 R9")
    pool = pool_of("R6 R10", 10, side)
    n, k = 12, 3
    outlook = side_outlook(STANDARD, side, 4, False, Supply(0, pool, k))
    # One of two named cards: 1 - P(neither is drawn).
    assert reach(outlook, WEDGE) == pytest.approx(1 - comb(n - 2, k) / comb(n, k))
    assert sorted(t for t, _ in outlook[WEDGE][1]) == [30, 34]


def test_fog_counts_only_the_sum() -> None:
    side = cards("R7 R8")
    pool = pool_of("R9 R6", 10, side)
    outlook = side_outlook(STANDARD, side, 3, True, Supply(0, pool, 3))
    categories = STANDARD.categories
    for index, (p, _) in enumerate(outlook):
        assert (p > 0) == (categories[index] is Category.ANY)


def test_a_morale_tactic_in_hand_fills_the_missing_card() -> None:
    side = cards("R9 R10")
    pool = pool_of("", 20, side)  # R8 is gone: face up elsewhere
    without = side_outlook(STANDARD, side, 3, False, Supply(0, pool, 3))
    assert reach(without, WEDGE) == 0.0
    leader = Supply(0, pool, 3, ((1, 2, 3, 4, 5, 6, 7, 8, 9, 10),))
    assert reach(side_outlook(STANDARD, side, 3, False, leader), WEDGE) == 1.0
    cavalry = Supply(0, pool, 3, ((8,),))
    assert reach(side_outlook(STANDARD, side, 3, False, cavalry), WEDGE) == 1.0
    shield = Supply(0, pool, 3, ((1, 2, 3),))
    assert reach(side_outlook(STANDARD, side, 3, False, shield), WEDGE) == 0.0


def test_a_leader_on_the_flag_is_wild() -> None:
    side = [Tactic.ALEXANDER, parse_card("R10")]
    pool = pool_of("R9", 9, side)
    outlook = side_outlook(STANDARD, side, 3, False, Supply(0, pool, 2))
    # The Leader stands for R9 or R8; R8 is not there, so R9 (or the Leader as R8 with R9).
    assert reach(outlook, WEDGE) == pytest.approx(2 / 10)


def test_complete_sides_are_compared_exactly() -> None:
    wedge = side_outlook(STANDARD, cards("R8 R9 R10"), 3, False, Supply(0, 0, 0))
    phalanx = side_outlook(STANDARD, cards("B9 G9 Y9"), 3, False, Supply(0, 0, 0))
    assert win_probability(wedge, phalanx) == 1.0
    assert win_probability(phalanx, wedge) == 0.0
    assert win_probability(wedge, wedge) == 0.5


def _predicates(values: list[int], colours: list[int]) -> list[bool]:
    ordered = sorted(values)
    run = all(b - a == 1 for a, b in pairwise(ordered))
    flush = len(set(colours)) == 1
    kind = len(set(values)) == 1
    return [run and flush, kind, flush, run, True]


def _brute_force(side: list[int], size: int, certain: int, pool: int, k: int) -> list[float]:
    """P(some completion satisfies each category), over every set of ``k`` draws."""
    unseen = [c for c in STANDARD.troops if pool >> c & 1]
    held = [c for c in STANDARD.troops if certain >> c & 1]
    missing = size - len(side)
    hits = [0] * 5
    total = 0
    for drawn in combinations(unseen, k):
        total += 1
        reached = [False] * 5
        for added in combinations(held + list(drawn), missing):
            full = side + list(added)
            holds = _predicates([VALUE[c] for c in full], [COLOUR[c] for c in full])
            reached = [r or h for r, h in zip(reached, holds, strict=True)]
        for i in range(5):
            hits[i] += reached[i]
    return [h / total for h in hits]


@pytest.mark.parametrize("seed", range(40))
def test_odds_match_brute_force_on_small_positions(seed: int) -> None:
    rng = random.Random(seed)
    troops = list(STANDARD.troops)
    rng.shuffle(troops)
    size = rng.choice((3, 3, 4))
    on_flag = rng.randint(1, size - 1)
    if rng.random() < 0.5:  # often a promising side: one colour, close values
        colour = rng.randrange(6)
        low = rng.randint(1, 10 - size + 1)
        side = [colour * 10 + v - 1 for v in rng.sample(range(low, low + size), on_flag)]
    else:
        side = troops[:on_flag]
    rest = [c for c in troops if c not in side]
    # Make the neighbourhood of the side likely to be in play.
    near = [c for c in rest if any(abs(VALUE[c] - VALUE[s]) <= 2 for s in side)]
    far = [c for c in rest if c not in near]
    rng.shuffle(near)
    chosen = near[: rng.randint(4, 9)] + far[: rng.randint(0, 3)]
    held_count = rng.randint(0, 2)
    certain = mask_of(chosen[:held_count])
    pool = mask_of(chosen[held_count:])
    k = rng.randint(0, min(4, len(chosen) - held_count))
    outlook = side_outlook(STANDARD, side, size, False, Supply(certain, pool, k))
    expected = _brute_force(side, size, certain, pool, k)
    assert [p for p, _ in outlook] == pytest.approx(expected, abs=1e-9)


def test_each_held_card_counts_at_one_flag_only() -> None:
    """The search's leaf counts a held troop where it fits best, not at every flag."""
    state = new_game("standard", None, 4)
    hand = mask_of(state.hands[0])
    held = assign_hand(state, 0, hand)
    assert sum(m.bit_count() for m in held) == hand.bit_count()
    combined = 0
    for mask in held:
        assert not combined & mask
        combined |= mask
    assert combined == hand



def test_a_side_over_the_flag_size_keeps_its_best_cards() -> None:
    """Mud leaving a flag with four cards a side: the odds judge the three cards each side
    keeps and never ask for a negative number of cards (which once looped forever)."""
    assert sorted(kept_after_discard(STANDARD, cards("B5 G5 Y5 R1"), 3, False)) == sorted(
        cards("B5 G5 Y5")
    )
    with pytest.raises(ValueError):
        best_formation(STANDARD, cards("B5 G5 Y5 O5"), -1, 0, False)
    state = position(
        flags={1: "R1 R2 R3 R4 | B5 G5 Y5 O5 | MUD/1 | -"}, hands=("DESERTER R9 G2 G3", "G7")
    )
    view = state.view(0)
    # With the Mud gone, the wedge R2-R3-R4 beats the phalanx of fives for sure.
    sides = cards("R1 R2 R3 R4"), cards("B5 G5 Y5 O5")
    assert FlagOdds(view, 0).chance(*sides, 3, False) == 1.0
    assert FlagOdds(view, 1).chance(sides[1], sides[0], 3, False) == 0.0
    assert ProbBot().choose(view, random.Random(1)) in view.legal_actions()


@pytest.mark.parametrize("leaf", [position_value, seen_position_value])
def test_both_leaves_price_a_tactic_played_beyond_the_opponents_count(
    leaf: Callable[[GameState, int], float],
) -> None:
    """A tactic played lets the opponent play one: the leaf that reads a sampled world's
    hands prices it as the leaf from the seat's own view does, or a search scored by it
    would spend tactics as if they were free."""
    state = position(flags={1: "R7 R8 | B5 | - | -"}, hands=("R9 G2 G3", "Y7 Y8"))
    even = leaf(state, 0)
    state.tactics_played[0] += 1
    ahead = leaf(state, 0)
    state.tactics_played[1] += 2
    behind = leaf(state, 0)
    assert 0.0 < ahead < even < behind < 1.0


def test_the_memos_are_bounded_and_forgotten_together(monkeypatch: pytest.MonkeyPatch) -> None:
    """A verdict holds its two outlooks, so forgetting the outlooks alone kept them alive
    through the verdicts: a hosted AI's search process grew to 750 MB (the thirty-third
    audit). Now both memos are forgotten at once; only the outlooks a leaf computed before a
    clearing (two a flag) may outlive it in a verdict."""
    monkeypatch.setattr(odds, "OUTLOOK_CACHE_SIZE", 300)
    odds.clear_memos()
    bot = make_bot("ismcts:level=5,seconds=none,margin=none,iterations=150")
    most_stale = 0
    for seed in range(6):
        state = new_game("standard", None, 700 + seed)
        rng = random.Random(seed)
        for _ in range(24):
            state.apply(ProbBot().choose(state.view(state.current_player), rng))
        bot.choose(state.view(state.current_player), rng)
        assert len(odds._OUTLOOKS) <= 300 and len(odds._VERDICTS) <= 300
        held = {id(outlook) for outlook in odds._OUTLOOKS.values()}
        stale = {id(o) for mine, theirs, _ in odds._VERDICTS.values() for o in (mine, theirs)}
        most_stale = max(most_stale, len(stale - held))
    assert most_stale <= 2 * 9
    odds.clear_memos()
