"""Exact odds of completing formations, and a flag's win probability built on them.

A side of a flag still missing cards completes it from two sources: cards it
is sure to hold (its hand, as far as the observer knows) and the draws it
will still make. From the observer's information every unseen troop is
equally likely to be among those draws, so "the side gets these j named
cards" and "the side gets at least r cards of this colour" are hypergeometric
events, counted exactly with binomial coefficients (no logistic of a
strength gap).

For each category a side can still reach, the side's *targets* are the
concrete ways to reach it (a wedge window and colour, a phalanx value, a
battalion colour, a skirmish window), each with its sum and its exact odds.
The odds of a category are those of reaching any of its targets (combined as
if independent: targets of one category share few cards), the side's best
category is the strongest it reaches, and a flag is won by the better best
category, sums deciding within one. `prob` (the bot) and the search's leaf
evaluation both stand on `FlagOdds`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations, permutations
from math import comb

from battleline_rules import GameState, Ruleset, best_formation
from battleline_rules.cards import COLOUR, UNKNOWN_TROOP, VALUE, Tactic
from battleline_rules.formations import FOG_CATEGORY, WILD_VALUES
from battleline_rules.rulesets import Category

# A target: its sum, and the probability the side reaches it.
Target = tuple[int, float]
# Per category of the ruleset (strongest first), the side's targets in it.
Outlook = tuple[tuple[Target, ...], ...]
# Under Fog only the sum counts: a spread of plausible sums, each with its weight.
FOG_SPREAD = 4.0


@dataclass(frozen=True, slots=True)
class Supply:
    """What a side may still add to its flags.

    ``certain``: troops it is sure to hold (a mask); ``pool``: the unseen
    troops (a mask), of which it will get ``draws`` at random; ``wilds``: the
    value sets of morale tactics it holds and may still play (Leader, Cavalry,
    Shield).
    """

    certain: int
    pool: int
    draws: int
    wilds: tuple[tuple[int, ...], ...] = ()


@lru_cache(maxsize=65536)
def all_drawn(pool: int, draws: int, named: int) -> float:
    """P(``named`` given unseen cards are all among ``draws`` random draws of ``pool``)."""
    if named > draws:
        return 0.0
    p = 1.0
    for i in range(named):
        p *= (draws - i) / (pool - i)
    return p


@lru_cache(maxsize=65536)
def at_least(pool: int, draws: int, good: int, needed: int) -> float:
    """P(at least ``needed`` of ``good`` unseen cards among ``draws`` draws of ``pool``)."""
    if needed <= 0:
        return 1.0
    top = min(good, draws)
    if needed > top:
        return 0.0
    total = comb(pool, draws)
    hits = sum(comb(good, x) * comb(pool - good, draws - x) for x in range(needed, top + 1))
    return hits / total


@lru_cache(maxsize=65536)
def none_drawn(pool: int, draws: int, bad: int) -> float:
    """P(none of ``bad`` given unseen cards among ``draws`` draws of ``pool``)."""
    if draws > pool - bad:
        return 0.0
    return comb(pool - bad, draws) / comb(pool, draws)


class _Side:
    """One side of one flag with its supply: builds the targets of each category."""

    def __init__(self, ruleset: Ruleset, cards: list[int], size: int, supply: Supply) -> None:
        self.ruleset = ruleset
        self.troops = [c for c in cards if c not in WILD_VALUES]
        self.wilds = [WILD_VALUES[c] for c in cards if c in WILD_VALUES]
        self.values = [VALUE[c] for c in self.troops]
        self.size = size
        self.missing = size - len(cards)
        self.supply = supply
        self.n_pool = supply.pool.bit_count()
        self.draws = min(supply.draws, self.n_pool)
        colours = {COLOUR[c] for c in self.troops}
        self.colours: tuple[int, ...] = (
            tuple(colours) if len(colours) == 1 else () if colours else tuple(range(ruleset.colours))
        )

    # --- the ways to fill open slots ------------------------------------------------

    def _assignments(self, open_values: list[int]) -> list[list[int]]:
        """Slot values left for troops once the side's own wilds take compatible slots."""
        wilds = self.wilds
        if not wilds:
            return [open_values]
        result = []
        for taken in permutations(open_values, len(wilds)):
            if all(v in w for v, w in zip(taken, wilds, strict=True)):
                result.append([v for v in open_values if v not in taken])
        return result

    def _named_odds(self, cards: list[int]) -> float:
        """Odds of holding every named card (a hand wild may stand in for one)."""
        certain, pool = self.supply.certain, self.supply.pool
        unseen = 0
        blocked: list[int] = []
        for card in cards:
            if certain >> card & 1:
                continue
            if pool >> card & 1:
                unseen += 1
            else:
                blocked.append(card)
        hand_wilds = self.supply.wilds
        if blocked:
            if len(blocked) > 1 or not any(VALUE[blocked[0]] in w for w in hand_wilds):
                return 0.0
            return all_drawn(self.n_pool, self.draws, unseen)
        p = all_drawn(self.n_pool, self.draws, unseen)
        if unseen and hand_wilds and any(VALUE[c] in w for c in cards for w in hand_wilds):
            p = max(p, all_drawn(self.n_pool, self.draws, unseen - 1))
        return p

    def _windows(self) -> list[tuple[int, list[int]]]:
        """Runs the side's troops fit: (sum, open values) per window, highest first."""
        values = self.values
        if len(set(values)) != len(values):
            return []
        ruleset, size = self.ruleset, self.size
        top_max = ruleset.max_value
        top_min = ruleset.min_value + size - 1
        if values:
            top_max = min(top_max, min(values) + size - 1)
            top_min = max(top_min, max(values))
        windows = []
        for top in range(top_max, top_min - 1, -1):
            low = top - size + 1
            windows.append(((low + top) * size // 2, [v for v in range(low, top + 1)
                                                      if v not in values]))
        return windows

    def run_flush(self) -> list[Target]:
        targets = []
        masks = self.ruleset.colour_masks
        values = self.ruleset.value_masks
        for total, open_values in self._windows():
            for colour in self.colours:
                best = 0.0
                for rest in self._assignments(open_values):
                    cards = [(masks[colour] & values[v]).bit_length() - 1 for v in rest]
                    best = max(best, self._named_odds(cards))
                if best > 0.0:
                    targets.append((total, best))
        return targets

    def _count_odds(self, mask: int, needed: int, wild_fits: bool) -> float:
        """Odds of adding ``needed`` cards from ``mask`` (a fitting hand wild counts as one)."""
        have = (self.supply.certain & mask).bit_count()
        good = (self.supply.pool & mask).bit_count()
        short = needed - have
        p = at_least(self.n_pool, self.draws, good, short)
        if wild_fits and short > 0:
            p = max(p, at_least(self.n_pool, self.draws, good, short - 1))
        return p

    def kind(self) -> list[Target]:
        values = set(self.values)
        if len(values) > 1:
            return []
        ruleset = self.ruleset
        candidates = values or range(ruleset.min_value, ruleset.max_value + 1)
        targets = []
        for value in candidates:
            if not all(value in w for w in self.wilds):
                continue
            fits = any(value in w for w in self.supply.wilds)
            p = self._count_odds(ruleset.value_masks[value], self.missing, fits)
            if p > 0.0:
                targets.append((value * self.size, p))
        return targets

    def flush(self) -> list[Target]:
        targets = []
        fixed = sum(self.values) + sum(max(w) for w in self.wilds)
        for colour in self.colours:
            mask = self.ruleset.colour_masks[colour]
            p = self._count_odds(mask, self.missing, bool(self.supply.wilds))
            if p > 0.0:
                targets.append((fixed + self._likely_values(mask), p))
        return targets

    def run(self) -> list[Target]:
        targets = []
        value_masks = self.ruleset.value_masks
        certain, pool = self.supply.certain, self.supply.pool
        hand_wilds = self.supply.wilds
        for total, open_values in self._windows():
            best = 0.0
            for rest in self._assignments(open_values):
                needed = [v for v in rest if not certain & value_masks[v]]
                options = [needed]
                if hand_wilds:
                    options += [
                        [u for u in needed if u != v]
                        for v in needed
                        if any(v in w for w in hand_wilds)
                    ]
                for values in options:
                    best = max(best, self._cover_odds([pool & value_masks[v] for v in values]))
            if best > 0.0:
                targets.append((total, best))
        return targets

    def _cover_odds(self, groups: list[int]) -> float:
        """Odds of drawing at least one card of each group (inclusion-exclusion)."""
        if len(groups) > self.draws:
            return 0.0
        p = 0.0
        n, k = self.n_pool, self.draws
        for r in range(len(groups) + 1):
            sign = -1.0 if r % 2 else 1.0
            for subset in combinations(groups, r):
                union = 0
                for g in subset:
                    union |= g
                p += sign * none_drawn(n, k, union.bit_count())
        return max(0.0, p)

    def any(self) -> list[Target]:
        fixed = sum(self.values) + sum(max(w) for w in self.wilds)
        held = self.supply.certain.bit_count()
        if held + self.draws + len(self.supply.wilds) < self.missing:
            return []
        return [(fixed + self._likely_values(self.ruleset.troop_mask), 1.0)]

    def _likely_values(self, mask: int) -> int:
        """A plausible sum for the open slots from ``mask``: held cards first, then the
        average unseen card of the better half."""
        certain = sorted((VALUE[c] for c in _bits(self.supply.certain & mask)), reverse=True)
        chosen = certain[: self.missing]
        left = self.missing - len(chosen)
        if left:
            unseen = sorted((VALUE[c] for c in _bits(self.supply.pool & mask)), reverse=True)
            better = unseen[: max(left, len(unseen) // 2)] or [0]
            chosen += [round(sum(better) / len(better))] * left
        return sum(chosen)

    def outlook(self, fog: bool) -> Outlook:
        categories = self.ruleset.categories
        if fog:
            found = self.any()
            spread: tuple[Target, ...] = ()
            if found:
                total = found[0][0]
                spread = tuple((total + d, 1.0) for d in (-2, 0, 2)) if self.missing else found[0:1]
            return tuple(spread if c is Category.ANY else () for c in categories)
        builders = {
            Category.RUN_FLUSH: self.run_flush,
            Category.KIND: self.kind,
            Category.FLUSH: self.flush,
            Category.RUN: self.run,
            Category.ANY: self.any,
        }
        return tuple(tuple(builders[c]()) for c in categories)


def _bits(mask: int) -> list[int]:
    cards = []
    while mask:
        low = mask & -mask
        cards.append(low.bit_length() - 1)
        mask ^= low
    return cards


def side_outlook(
    ruleset: Ruleset, cards: list[int], size: int, fog: bool, supply: Supply
) -> Outlook:
    """The targets a side can still reach, per category; a complete side has one, certain."""
    if len(cards) >= size:
        formation = best_formation(ruleset, cards, 0, 0, fog)
        assert formation is not None
        index = ruleset.categories.index(Category.ANY) if fog else formation.category
        if formation.category == FOG_CATEGORY:
            index = ruleset.categories.index(Category.ANY)
        return tuple(
            ((formation.total, 1.0),) if i == index else () for i in range(len(ruleset.categories))
        )
    return _Side(ruleset, cards, size, supply).outlook(fog)


def _best_category(outlook: Outlook) -> list[tuple[float, tuple[Target, ...]]]:
    """P(the side's best category is each one), with that category's targets."""
    result = []
    miss = 1.0
    for targets in outlook:
        fail = 1.0
        for _, p in targets:
            fail *= 1.0 - p
        result.append((miss * (1.0 - fail), targets))
        miss *= fail
    return result


def _sum_beats(mine: tuple[Target, ...], theirs: tuple[Target, ...], fog: bool) -> float:
    """Within one category: chance my sum beats theirs, weighting targets by their odds."""
    wm = sum(p for _, p in mine)
    wt = sum(p for _, p in theirs)
    if wm <= 0.0 or wt <= 0.0:
        return 0.5
    score = 0.0
    for a, pa in mine:
        for b, pb in theirs:
            score += pa * pb * (1.0 if a > b else 0.5 if a == b else 0.0)
    return score / (wm * wt)


def win_probability(mine: Outlook, theirs: Outlook, fog: bool = False) -> float:
    """Chance my side beats theirs at a flag (ties in strength count half)."""
    me = _best_category(mine)
    them = _best_category(theirs)
    me_done = sum(p for p, _ in me)
    them_done = sum(p for p, _ in them)
    win = me_done * (1.0 - them_done) + 0.5 * (1.0 - me_done) * (1.0 - them_done)
    below = them_done  # their chance of a category weaker than the one considered
    for i, (p, targets) in enumerate(me):
        q, their_targets = them[i]
        below -= q
        if p:
            win += p * (below + q * _sum_beats(targets, their_targets, fog))
    return max(0.0, min(1.0, win))


def future_draws(state: GameState, seat: int) -> int:
    """Troops ``seat`` will still draw if both seats keep drawing troops."""
    deck = len(state.decks[0])
    first = state.player == seat  # the seat to act draws first
    return (deck + (1 if first else 0)) // 2


def supplies(state: GameState, seat: int) -> tuple[Supply, Supply]:
    """``seat``'s supply and its opponent's, from what ``seat`` can see of ``state``.

    On a view the opponent's hand is unseen: its troops join the pool, and the
    opponent gets them as extra draws. On a full state (a sampled world) both
    hands are known.
    """
    other = 1 - seat
    own = _hand_troops(state.hands[seat])
    their_known = _hand_troops(state.hands[other])
    hidden = sum(1 for c in state.hands[other] if c == UNKNOWN_TROOP)
    pool = state.available & ~own & ~their_known
    mine = Supply(own, pool, future_draws(state, seat), _hand_wilds(state, seat))
    theirs = Supply(
        their_known, pool, future_draws(state, other) + hidden, _hand_wilds(state, other)
    )
    return mine, theirs


def _hand_troops(hand: list[int]) -> int:
    mask = 0
    for card in hand:
        if 0 <= card < Tactic.ALEXANDER or card > Tactic.TRAITOR:
            mask |= 1 << card
    return mask


def _hand_wilds(state: GameState, seat: int) -> tuple[tuple[int, ...], ...]:
    """Morale tactics in ``seat``'s hand it may still play (one Leader per game)."""
    wilds = []
    for card in state.hands[seat]:
        if card in WILD_VALUES:
            if card in (Tactic.ALEXANDER, Tactic.DARIUS) and state.leader_used[seat]:
                continue
            wilds.append(WILD_VALUES[card])
    return tuple(wilds)


class FlagOdds:
    """Win probabilities of one seat's flags as seen from ``state``, for one decision.

    Outlooks are memoised per side and supply, so scoring every candidate play
    recomputes only the sides a play changes.
    """

    def __init__(self, state: GameState, seat: int) -> None:
        self.state = state
        self.ruleset = state.ruleset
        self.seat = seat
        self.mine, self.theirs = supplies(state, seat)
        self._outlooks: dict[tuple[object, ...], Outlook] = {}

    def outlook(self, cards: list[int], size: int, fog: bool, supply: Supply) -> Outlook:
        key = (tuple(cards), size, fog, supply)
        found = self._outlooks.get(key)
        if found is None:
            found = self._outlooks[key] = side_outlook(self.ruleset, cards, size, fog, supply)
        return found

    def chance(
        self,
        mine: list[int],
        theirs: list[int],
        size: int,
        fog: bool,
        placed: int = 0,
        spent: int = 0,
    ) -> float:
        """P(the seat wins a flag with these sides).

        ``placed``: troops just put face up (no longer anyone's to draw or
        hold); ``spent``: cards of the seat's hand it has used elsewhere.
        """
        own, other = self.mine, self.theirs
        gone = placed | spent
        if gone:
            own = Supply(own.certain & ~gone, own.pool & ~placed, own.draws, own.wilds)
            other = Supply(other.certain & ~placed, other.pool & ~placed, other.draws, other.wilds)
        if len(mine) >= size or len(theirs) >= size:
            proven = _proven_winner(self.ruleset, mine, theirs, size, fog, self.state.available
                                    & ~placed)
            if proven is not None:
                return 1.0 if proven == 0 else 0.0
        return win_probability(
            self.outlook(mine, size, fog, own), self.outlook(theirs, size, fog, other), fog
        )


def _proven_winner(
    ruleset: Ruleset, first: list[int], second: list[int], size: int, fog: bool, available: int
) -> int | None:
    """0 or 1 when one complete side already beats every completion of the other.

    Equal strengths are left open: who completed first decides them.
    """
    for index, (done, other) in enumerate(((first, second), (second, first))):
        if len(done) < size:
            continue
        held = best_formation(ruleset, done, 0, 0, fog)
        assert held is not None
        best = best_formation(ruleset, other, size - len(other), available, fog)
        if best is None or best.strength < held.strength:
            return index
    return None
