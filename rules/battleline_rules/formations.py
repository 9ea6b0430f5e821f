"""Formation strength, and the best formation a side can still reach.

A strength is one int: ``rank * 100 + sum`` where rank grows with the
ruleset's category order (under Fog rank is 0, so only the sum counts).
Ties in strength are broken by completion order, which the caller knows.

`best_formation` answers "what is the strongest formation this side can end
up with, adding ``missing`` cards from ``available``?" without enumerating
completions: it tries each category from the strongest down and, within a
category, builds the highest-sum formation directly. The first category that
can be built is the answer, because a formation's category is the strongest
predicate it satisfies. `brute_force_best` enumerates instead; tests and the
benchmark compare the two.
"""

from __future__ import annotations

from itertools import combinations, pairwise, permutations, product
from typing import Final, NamedTuple

from .cards import COLOUR, VALUE, Tactic
from .rulesets import Category, Ruleset

WILD_VALUES: Final[dict[int, tuple[int, ...]]] = {
    Tactic.ALEXANDER: tuple(range(1, 11)),
    Tactic.DARIUS: tuple(range(1, 11)),
    Tactic.CAVALRY: (8,),
    Tactic.SHIELD: (1, 2, 3),
}

FOG_CATEGORY: Final = -1


class Formation(NamedTuple):
    """A (possibly hypothetical) formation on one side of a flag."""

    strength: int
    # Index into the ruleset's categories, or FOG_CATEGORY when only the sum counts.
    category: int
    total: int
    # The troop cards that would be added to reach it (empty for a complete side).
    added: tuple[int, ...]


def describe(ruleset: Ruleset, formation: Formation) -> str:
    """Human words for a formation: ``wedge, sum 27``."""
    name = (
        "sum only (fog)"
        if formation.category == FOG_CATEGORY
        else (ruleset.category_names[formation.category])
    )
    return f"{name}, sum {formation.total}"


def _strength(ruleset: Ruleset, category: int, total: int) -> int:
    return (len(ruleset.categories) - 1 - category) * 100 + total


def _lowest_bits(mask: int, count: int) -> tuple[int, ...]:
    cards = []
    while count:
        low = mask & -mask
        cards.append(low.bit_length() - 1)
        mask ^= low
        count -= 1
    return tuple(cards)


class _Side:
    """The fixed part of a side plus what may be added; built once per query."""

    __slots__ = (
        "available",
        "colours",
        "flush_colours",
        "missing",
        "ruleset",
        "size",
        "troop_values",
        "troops",
        "wilds",
    )

    def __init__(self, ruleset: Ruleset, cards: list[int], missing: int, available: int) -> None:
        self.ruleset = ruleset
        self.troops = [c for c in cards if c not in WILD_VALUES]
        self.wilds = [WILD_VALUES[c] for c in cards if c in WILD_VALUES]
        self.troop_values = [VALUE[c] for c in self.troops]
        self.missing = missing
        self.size = len(cards) + missing
        self.available = available
        colours = {COLOUR[c] for c in self.troops}
        if len(colours) == 1:
            self.flush_colours: tuple[int, ...] = tuple(colours)
        elif not colours:
            self.flush_colours = tuple(range(ruleset.colours))
        else:
            self.flush_colours = ()

    def fixed_total(self) -> int:
        return sum(self.troop_values) + sum(max(w) for w in self.wilds)

    def top_values(self, pool: int) -> tuple[int, ...] | None:
        """The ``missing`` highest-value cards of a pool, or None if too few."""
        chosen: list[int] = []
        masks = self.ruleset.value_masks
        for value in range(self.ruleset.max_value, self.ruleset.min_value - 1, -1):
            here = pool & masks[value]
            while here and len(chosen) < self.missing:
                low = here & -here
                chosen.append(low.bit_length() - 1)
                here ^= low
            if len(chosen) == self.missing:
                return tuple(chosen)
        return tuple(chosen) if len(chosen) == self.missing else None

    def run(self, colours: tuple[int | None, ...]) -> tuple[int, tuple[int, ...]] | None:
        """Highest-sum run (of one of ``colours``; None: any), as (total, added cards)."""
        fixed = set(self.troop_values)
        if len(fixed) != len(self.troop_values):
            return None
        ruleset, size = self.ruleset, self.size
        # The run's top value: it must cover every fixed value and stay in range.
        highest = ruleset.max_value
        lowest = ruleset.min_value + size - 1
        if fixed:
            highest = min(highest, min(fixed) + size - 1)
            lowest = max(lowest, max(fixed))
        wilds = self.wilds
        for top in range(highest, lowest - 1, -1):
            low = top - size + 1
            open_values = [v for v in range(low, top + 1) if v not in fixed]
            for assigned in permutations(open_values, len(wilds)) if wilds else ((),):
                if wilds and not all(v in w for v, w in zip(assigned, wilds, strict=True)):
                    continue
                needed = [v for v in open_values if v not in assigned]
                for colour in colours:
                    added = self._cards_for(needed, colour)
                    if added is not None:
                        return (low + top) * size // 2, added
        return None

    def _cards_for(self, values: list[int], colour: int | None) -> tuple[int, ...] | None:
        ruleset, available = self.ruleset, self.available
        cards = []
        for value in values:
            pool = available & ruleset.value_masks[value]
            if colour is not None:
                pool &= ruleset.colour_masks[colour]
            if not pool:
                return None
            cards.append((pool & -pool).bit_length() - 1)
        return tuple(cards)

    def kind(self) -> tuple[int, tuple[int, ...]] | None:
        values = set(self.troop_values)
        if len(values) > 1:
            return None
        candidates = values or range(self.ruleset.max_value, self.ruleset.min_value - 1, -1)
        for value in sorted(candidates, reverse=True):
            if not all(value in w for w in self.wilds):
                continue
            pool = self.available & self.ruleset.value_masks[value]
            if pool.bit_count() >= self.missing:
                return value * self.size, _lowest_bits(pool, self.missing)
        return None

    def flush(self) -> tuple[int, tuple[int, ...]] | None:
        best: tuple[int, tuple[int, ...]] | None = None
        missing = self.missing
        for colour in self.flush_colours:
            pool = self.available & self.ruleset.colour_masks[colour]
            if pool.bit_count() < missing:
                continue
            # Within one colour, card ids grow with value: take the highest bits.
            added = []
            for _ in range(missing):
                card = pool.bit_length() - 1
                added.append(card)
                pool ^= 1 << card
            total = self.fixed_total() + sum(VALUE[c] for c in added)
            if best is None or total > best[0]:
                best = (total, tuple(added))
        return best

    def any(self) -> tuple[int, tuple[int, ...]] | None:
        added = self.top_values(self.available)
        if added is None:
            return None
        return self.fixed_total() + sum(VALUE[c] for c in added), added

    def search(self, category: Category) -> tuple[int, tuple[int, ...]] | None:
        if category is Category.RUN_FLUSH:
            return self.run(self.flush_colours) if self.flush_colours else None
        if category is Category.KIND:
            return self.kind()
        if category is Category.FLUSH:
            return self.flush()
        if category is Category.RUN:
            return self.run((None,))
        return self.any()


_COMPLETE_CACHE: dict[tuple[bool, tuple[int, ...]], Formation] = {}
# Complete sides remembered before they are forgotten at once: a few thousand occur in
# practice, and the bound (about 30 MB) keeps a long-lived process from holding them all.
COMPLETE_CACHE_SIZE = 100_000


def best_formation(
    ruleset: Ruleset, cards: list[int], missing: int, available: int, fog: bool
) -> Formation | None:
    """Strongest formation reachable by adding ``missing`` cards from ``available``.

    ``cards`` are the cards already on the side (troops and morale tactics,
    the latter at their best); None means the side cannot be completed.
    With ``missing == 0`` this is the strength of a complete side (cached).
    A side never lacks a negative number of cards: one holding more than its flag
    takes (Mud leaving) must first choose the cards it keeps.
    """
    if missing < 0:
        raise ValueError(f"a side of {len(cards)} cards cannot lack {missing}")
    if missing == 0:
        key = (fog, tuple(sorted(cards)))
        cached = _COMPLETE_CACHE.get(key)
        if cached is None:
            cached = _search(ruleset, cards, 0, 0, fog)
            assert cached is not None
            if len(_COMPLETE_CACHE) >= COMPLETE_CACHE_SIZE:
                _COMPLETE_CACHE.clear()
            _COMPLETE_CACHE[key] = cached
        return cached
    return _search(ruleset, cards, missing, available & ruleset.troop_mask, fog)


def _search(
    ruleset: Ruleset, cards: list[int], missing: int, available: int, fog: bool
) -> Formation | None:
    if available.bit_count() < missing:
        return None
    side = _Side(ruleset, cards, missing, available)
    if fog:
        found = side.any()
        return None if found is None else Formation(found[0], FOG_CATEGORY, *found)
    for index, category in enumerate(ruleset.categories):
        found = side.search(category)
        if found is not None:
            return Formation(_strength(ruleset, index, found[0]), index, *found)
    return None


def classify(ruleset: Ruleset, values: list[int], colours: list[int], fog: bool) -> int:
    """Strength of a concrete formation (every card's colour and value fixed)."""
    total = sum(values)
    if fog:
        return total
    flush = len(set(colours)) == 1
    kind = len(set(values)) == 1
    ordered = sorted(values)
    run = all(b - a == 1 for a, b in pairwise(ordered))
    holds = {
        Category.RUN_FLUSH: run and flush,
        Category.KIND: kind,
        Category.FLUSH: flush,
        Category.RUN: run,
        Category.ANY: True,
    }
    for index, category in enumerate(ruleset.categories):
        if holds[category]:
            return _strength(ruleset, index, total)
    raise AssertionError("ANY always holds")


def brute_force_best(
    ruleset: Ruleset, cards: list[int], missing: int, available: int, fog: bool
) -> int | None:
    """Best strength by enumerating every completion and every morale assignment.

    Slow by design: the reference that `best_formation` is checked against.
    """
    troops = [c for c in cards if c not in WILD_VALUES]
    wild_choices = [
        [(colour, value) for colour in range(ruleset.colours) for value in WILD_VALUES[c]]
        for c in cards
        if c in WILD_VALUES
    ]
    pool = [c for c in ruleset.troops if available >> c & 1]
    best: int | None = None
    for combo in combinations(pool, missing):
        fixed = troops + list(combo)
        values = [VALUE[c] for c in fixed]
        colours = [COLOUR[c] for c in fixed]
        for assignment in product(*wild_choices):
            strength = classify(
                ruleset,
                values + [v for _, v in assignment],
                colours + [c for c, _ in assignment],
                fog,
            )
            if best is None or strength > best:
                best = strength
    return best
