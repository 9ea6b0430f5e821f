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
from math import comb, exp

from battleline_rules import GameState, Ruleset, best_formation
from battleline_rules.board import UNCLAIMED
from battleline_rules.cards import COLOUR, UNKNOWN_TROOP, VALUE, Tactic
from battleline_rules.formations import FOG_CATEGORY, WILD_VALUES
from battleline_rules.rulesets import Category

from .evaluation import flag_weights
from .heuristic import TACTIC_COST
from .rollout import fit, flag_shapes

# A target: its sum, and the probability the side reaches it.
Target = tuple[int, float]
# Targets of one category, and the odds of reaching at least one of them.
Reach = tuple[list[Target], float]
# Per category of the ruleset (strongest first): the odds of reaching it, and its targets.
Outlook = tuple[tuple[float, tuple[Target, ...]], ...]
# Above this many targets, a category's odds treat its targets as independent.
MAX_EXACT_UNION = 4
# Under Fog only the sum counts: a spread of plausible sums, each with its weight.
# How sharply the weighted flag odds turn into a game-winning chance.
LEAF_SCALE = 1.2


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


class _Shape:
    """The fixed part of a side: its troops, its wilds, and the runs it could still be."""

    def __init__(self, ruleset: Ruleset, cards: tuple[int, ...], size: int) -> None:
        self.ruleset = ruleset
        self.troops = [c for c in cards if c not in WILD_VALUES]
        self.wilds = [WILD_VALUES[c] for c in cards if c in WILD_VALUES]
        self.values = [VALUE[c] for c in self.troops]
        self.size = size
        self.missing = size - len(cards)
        colours = {COLOUR[c] for c in self.troops}
        # The colours a flush could still be: the troops' one, any while there are none.
        self.colours: tuple[int, ...] = tuple(colours) if len(colours) == 1 else ()
        if not colours:
            self.colours = tuple(range(ruleset.colours))
        self.fixed_total = sum(self.values) + sum(max(w) for w in self.wilds)
        masks, value_masks = ruleset.colour_masks, ruleset.value_masks
        # Run targets: (sum, ways), a way being one (value, group) per open slot.
        self.run_flushes = [
            (total, [[(v, masks[colour] & value_masks[v]) for v in rest] for rest in ways])
            for total, ways in self._windows()
            for colour in self.colours
        ]
        self.runs = [
            (total, [[(v, value_masks[v]) for v in rest] for rest in ways])
            for total, ways in self._windows()
        ]

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

    def _windows(self) -> list[tuple[int, list[list[int]]]]:
        """Runs the troops fit: (sum, the troop values still needed, per wild assignment)."""
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
            open_values = [v for v in range(low, top + 1) if v not in values]
            ways = self._assignments(open_values)
            if ways:
                windows.append(((low + top) * size // 2, ways))
        return windows


@lru_cache(maxsize=8192)
def _shape(ruleset: Ruleset, cards: tuple[int, ...], size: int) -> _Shape:
    return _Shape(ruleset, cards, size)


class _Side:
    """One side of one flag with its supply: the odds of each category's targets."""

    def __init__(self, ruleset: Ruleset, cards: list[int], size: int, supply: Supply) -> None:
        self.ruleset = ruleset
        shape = self.shape = _shape(ruleset, tuple(cards), size)
        self.values, self.wilds = shape.values, shape.wilds
        self.size, self.missing, self.colours = size, shape.missing, shape.colours
        self.supply = supply
        self.n_pool = supply.pool.bit_count()
        self.draws = min(supply.draws, self.n_pool)

    def _needs(self, groups: list[int]) -> tuple[int, ...] | None:
        """The unseen groups a target must hit, one card each: groups already held drop
        out; None when a group can be neither held nor drawn."""
        certain, pool = self.supply.certain, self.supply.pool
        needs = []
        for group in groups:
            if certain & group:
                continue
            unseen = pool & group
            if not unseen:
                return None
            needs.append(unseen)
        return tuple(sorted(needs))

    def _category(self, targets: list[tuple[int, list[list[tuple[int, int]]]]]) -> Reach:
        """Odds of each target and of the whole category, from every target's slot groups.

        A target lists one group of cards per open slot (a named card, or every
        card of a value): it is reached when the side holds or draws one card of
        each group. The side's own wilds may take compatible slots (several
        ways, given as alternatives); a wild in hand may fill one more.
        """
        reached: list[Target] = []
        plain: list[tuple[int, ...]] = []
        best_with_wild = 0.0
        hand_wilds = self.supply.wilds
        for total, ways in targets:
            best = 0.0
            for slots in ways:
                needs = self._needs([g for _, g in slots])
                if needs is not None:
                    plain.append(needs)
                    best = max(best, self.cover(needs))
                if hand_wilds:
                    for i, (value, _) in enumerate(slots):
                        if any(value in w for w in hand_wilds):
                            rest = self._needs([g for j, (_, g) in enumerate(slots) if j != i])
                            if rest is not None:
                                best_with_wild = max(best_with_wild, self.cover(rest))
                                best = max(best, self.cover(rest))
            if best > 0.0:
                reached.append((total, best))
        return reached, max(self._union(plain), best_with_wild)

    def cover(self, needs: tuple[int, ...]) -> float:
        return cover_odds(self.n_pool, self.draws, needs)

    def _union(self, needs: list[tuple[int, ...]]) -> float:
        """Odds of reaching at least one target: inclusion-exclusion over a few targets
        (exact), as if independent over many (an empty side's dozens of windows)."""
        distinct = list(dict.fromkeys(needs))
        if not distinct:
            return 0.0
        if len(distinct) > MAX_EXACT_UNION:
            miss = 1.0
            for need in distinct:
                miss *= 1.0 - self.cover(need)
            return 1.0 - miss
        total = 0.0
        for r in range(1, len(distinct) + 1):
            sign = 1.0 if r % 2 else -1.0
            for subset in combinations(distinct, r):
                joined = tuple(sorted({g for need in subset for g in need}))
                total += sign * self.cover(joined)
        return min(1.0, max(0.0, total))

    def run_flush(self) -> Reach:
        return self._category(self.shape.run_flushes)

    def run(self) -> Reach:
        return self._category(self.shape.runs)

    def _count_odds(self, mask: int, needed: int, wild_fits: bool) -> float:
        """Odds of adding ``needed`` cards from ``mask`` (a fitting hand wild counts as one)."""
        have = (self.supply.certain & mask).bit_count()
        good = (self.supply.pool & mask).bit_count()
        short = needed - have
        p = at_least(self.n_pool, self.draws, good, short)
        if wild_fits and short > 0:
            p = max(p, at_least(self.n_pool, self.draws, good, short - 1))
        return p

    def kind(self) -> Reach:
        values = set(self.values)
        if len(values) > 1:
            return [], 0.0
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
        return targets, _independent(targets)

    def flush(self) -> Reach:
        targets = []
        fixed = self.shape.fixed_total
        for colour in self.colours:
            mask = self.ruleset.colour_masks[colour]
            p = self._count_odds(mask, self.missing, bool(self.supply.wilds))
            if p > 0.0:
                targets.append((fixed + self._likely_values(mask), p))
        return targets, _independent(targets)

    def any(self) -> Reach:
        fixed = self.shape.fixed_total
        held = self.supply.certain.bit_count()
        if held + self.draws + len(self.supply.wilds) < self.missing:
            return [], 0.0
        return [(fixed + self._likely_values(self.ruleset.troop_mask), 1.0)], 1.0

    def _likely_values(self, mask: int) -> int:
        return _likely_sum(self.supply.certain & mask, self.supply.pool & mask, self.missing)

    def outlook(self, fog: bool) -> Outlook:
        categories = self.ruleset.categories
        if fog:
            targets, p = self.any()
            if targets and self.missing:
                total = targets[0][0]
                targets = [(total + d, 1.0) for d in (-2, 0, 2)]
            return tuple(
                (p, tuple(targets)) if c is Category.ANY else (0.0, ()) for c in categories
            )
        builders = {
            Category.RUN_FLUSH: self.run_flush,
            Category.KIND: self.kind,
            Category.FLUSH: self.flush,
            Category.RUN: self.run,
            Category.ANY: self.any,
        }
        outlook = []
        for category in categories:
            targets, p = builders[category]()
            outlook.append((p, _merged(targets)))
        return tuple(outlook)


def _independent(targets: list[Target]) -> float:
    miss = 1.0
    for _, p in targets:
        miss *= 1.0 - p
    return 1.0 - miss


@lru_cache(maxsize=1 << 17)
def cover_odds(pool: int, draws: int, needs: tuple[int, ...]) -> float:
    """P(at least one card of each disjoint group among ``draws`` draws of ``pool``)."""
    if len(needs) > draws:
        return 0.0
    if all(g & (g - 1) == 0 for g in needs):
        return all_drawn(pool, draws, len(needs))
    p = 0.0
    for r in range(len(needs) + 1):
        sign = -1.0 if r % 2 else 1.0
        for subset in combinations(needs, r):
            p += sign * none_drawn(pool, draws, sum(g.bit_count() for g in subset))
    return min(1.0, max(0.0, p))


@lru_cache(maxsize=65536)
def _likely_sum(certain: int, pool: int, missing: int) -> int:
    """A plausible sum for ``missing`` open slots: held cards first, then the average
    unseen card of the better half."""
    chosen = sorted((VALUE[c] for c in _bits(certain)), reverse=True)[:missing]
    left = missing - len(chosen)
    if left:
        unseen = sorted((VALUE[c] for c in _bits(pool)), reverse=True)
        better = unseen[: max(left, len(unseen) // 2)] or [0]
        chosen += [round(sum(better) / len(better))] * left
    return sum(chosen)


def _bits(mask: int) -> list[int]:
    cards = []
    while mask:
        low = mask & -mask
        cards.append(low.bit_length() - 1)
        mask ^= low
    return cards


def _merged(targets: list[Target]) -> tuple[Target, ...]:
    """One target per sum (odds combined as independent), highest sum first."""
    if len(targets) < 2:
        return tuple(targets)
    miss: dict[int, float] = {}
    for total, p in targets:
        miss[total] = miss.get(total, 1.0) * (1.0 - p)
    return tuple((total, 1.0 - m) for total, m in sorted(miss.items(), reverse=True))


_OUTLOOKS: dict[tuple[object, ...], Outlook] = {}
# Entries of each memo before both are forgotten together: about 250 MB of a search
# process at the bound, searching no slower than 200,000 did (which grew a hosted AI's
# search processes to 750 MB each, past its container's limit: the thirty-third audit).
OUTLOOK_CACHE_SIZE = 50_000
# `win_probability` of two outlooks, by their ids (hashing the outlooks would cost about
# what the verdict does). Each entry holds its two outlooks, so neither id can name another
# object while it is a key. Half of a search's flag verdicts repeat a pair of outlooks.
_VERDICTS: dict[tuple[int, int], tuple[Outlook, Outlook, float]] = {}


def clear_memos() -> None:
    """Forget the memoised outlooks and verdicts together (a verdict holds its outlooks:
    clearing one memo alone would keep the other's memory)."""
    _OUTLOOKS.clear()
    _VERDICTS.clear()


def side_outlook(
    ruleset: Ruleset, cards: list[int], size: int, fog: bool, supply: Supply
) -> Outlook:
    """The targets a side can still reach, per category; a complete side has one, certain.

    Memoised process-wide: a search meets the same sides and supplies over and over.
    """
    key = (ruleset.name, tuple(cards), size, fog, supply)
    found = _OUTLOOKS.get(key)
    if found is None:
        if len(_OUTLOOKS) >= OUTLOOK_CACHE_SIZE:
            clear_memos()
        found = _OUTLOOKS[key] = _outlook(ruleset, cards, size, fog, supply)
    return found


def _outlook(ruleset: Ruleset, cards: list[int], size: int, fog: bool, supply: Supply) -> Outlook:
    if len(cards) >= size:
        formation = best_formation(ruleset, cards, 0, 0, fog)
        assert formation is not None
        index = ruleset.categories.index(Category.ANY) if fog else formation.category
        if formation.category == FOG_CATEGORY:
            index = ruleset.categories.index(Category.ANY)
        return tuple(
            (1.0, ((formation.total, 1.0),)) if i == index else (0.0, ())
            for i in range(len(ruleset.categories))
        )
    return _Side(ruleset, cards, size, supply).outlook(fog)


def _best_category(outlook: Outlook) -> list[tuple[float, tuple[Target, ...]]]:
    """P(the side's best category is each one), with that category's targets."""
    result = []
    miss = 1.0
    for p, targets in outlook:
        result.append((miss * p, targets))
        miss *= 1.0 - p
    return result


def _sum_beats(mine: tuple[Target, ...], theirs: tuple[Target, ...]) -> float:
    """Within one category: chance my sum beats theirs, weighting targets by their odds.

    Both lists are sorted by sum, highest first (`_merged`): one merge pass.
    """
    if len(mine) == 1 and len(theirs) == 1:
        a, b = mine[0][0], theirs[0][0]
        return 1.0 if a > b else 0.5 if a == b else 0.0
    wm = sum(p for _, p in mine)
    wt = sum(p for _, p in theirs)
    if wm <= 0.0 or wt <= 0.0:
        return 0.5
    score = 0.0
    below = wt  # weight of their targets with a sum not above the current one
    j = 0
    n = len(theirs)
    for a, pa in mine:
        while j < n and theirs[j][0] > a:
            below -= theirs[j][1]
            j += 1
        equal = 0.0
        k = j
        while k < n and theirs[k][0] == a:
            equal += theirs[k][1]
            k += 1
        score += pa * (below - equal + 0.5 * equal)
    return score / (wm * wt)


def _memo_win_probability(mine: Outlook, theirs: Outlook) -> float:
    """`win_probability` of two outlooks from `side_outlook`, memoised (`_VERDICTS`)."""
    key = (id(mine), id(theirs))
    found = _VERDICTS.get(key)
    if found is None:
        if len(_VERDICTS) >= OUTLOOK_CACHE_SIZE:
            clear_memos()
        found = _VERDICTS[key] = (mine, theirs, win_probability(mine, theirs))
    return found[2]


def win_probability(mine: Outlook, theirs: Outlook) -> float:
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
            win += p * (below + q * _sum_beats(targets, their_targets))
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
    """Win probabilities of one seat's flags as seen from ``state``."""

    def __init__(self, state: GameState, seat: int) -> None:
        self.state = state
        self.ruleset = state.ruleset
        self.seat = seat
        self.mine, self.theirs = supplies(state, seat)
        # Per flag, the held troops counted as certain there (`assign_hand`): made on the
        # first query that names a flag (`prob` never does).
        self._held: tuple[list[int], list[int]] | None = None

    def outlook(self, cards: list[int], size: int, fog: bool, supply: Supply) -> Outlook:
        return side_outlook(self.ruleset, cards, size, fog, supply)

    def chance(
        self,
        mine: list[int],
        theirs: list[int],
        size: int,
        fog: bool,
        placed: int = 0,
        index: int | None = None,
    ) -> float:
        """P(the seat wins flag ``index`` with these sides (None: every held card counts);
        ``placed``: troops just put face up (no longer anyone's to draw or hold)."""
        own, other = self.mine, self.theirs
        if index is not None:
            if self._held is None:
                self._held = (
                    assign_hand(self.state, self.seat, own.certain),
                    assign_hand(self.state, 1 - self.seat, other.certain),
                )
            own = Supply(self._held[0][index], own.pool, own.draws, own.wilds)
            other = Supply(self._held[1][index], other.pool, other.draws, other.wilds)
        if placed:
            own = Supply(own.certain & ~placed, own.pool & ~placed, own.draws, own.wilds)
            other = Supply(other.certain & ~placed, other.pool & ~placed, other.draws, other.wilds)
        mine = kept_after_discard(self.ruleset, mine, size, fog)
        theirs = kept_after_discard(self.ruleset, theirs, size, fog)
        if len(mine) >= size or len(theirs) >= size:
            proven = _proven_winner(self.ruleset, mine, theirs, size, fog, self.state.available
                                    & ~placed)
            if proven is not None:
                return 1.0 if proven == 0 else 0.0
        return _memo_win_probability(
            self.outlook(mine, size, fog, own), self.outlook(theirs, size, fog, other)
        )


def kept_after_discard(ruleset: Ruleset, cards: list[int], size: int, fog: bool) -> list[int]:
    """The cards a side keeps when it holds more than the flag takes (Mud is leaving and
    its owner will discard one): the best complete formation among them."""
    if len(cards) <= size:
        return cards

    def strength(kept: list[int]) -> int:
        formation = best_formation(ruleset, kept, 0, 0, fog)
        assert formation is not None  # a complete side always has a formation
        return formation.strength

    return max((list(kept) for kept in combinations(cards, size)), key=strength)


def assign_hand(state: GameState, seat: int, hand: int) -> list[int]:
    """Per flag, the troops of ``hand`` counted as held there: each at the one open flag
    it fits best (`rollout`'s fit). A card goes to one flag only: counted as certain
    at every flag, playing it would look like a loss at all the others."""
    held = [0] * len(state.flags)
    shapes = flag_shapes(state, seat)
    if not shapes:
        return held
    for card in _bits(hand):
        best = max(shapes, key=lambda shape: fit(shape, card))
        held[best[0]] |= 1 << card
    return held


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


def position_value(state: GameState, seat: int) -> float:
    """Chance in [0, 1] that ``seat`` wins, judged from all that ``state`` shows (both
    hands, in a sampled world): exact when over, else from every flag's odds, with
    tactics priced as in `seen_position_value`."""
    if state.is_over:
        return 0.5 if state.winner is None else float(state.winner == seat)
    return _odds_value(state, seat, -_tactics_owed(state, seat))


def seen_position_value(state: GameState, seat: int) -> float:
    """`position_value` judged from ``seat``'s own view: in a sampled world the
    opponent's hand is a guess, and this leaf counts it as unseen cards (extra draws at
    every flag) rather than as the seven cards it is (`leaf=odds` reads the guess)."""
    if state.is_over:
        return 0.5 if state.winner is None else float(state.winner == seat)
    return _odds_value(state.view(seat), seat, -_tactics_owed(state, seat))


def _tactics_owed(state: GameState, seat: int) -> float:
    """The price of the tactics ``seat`` played beyond the opponent's count: each lets
    the opponent play one, as `prob` and the heuristic price it, or a search would spend
    tactics as if they were free."""
    return TACTIC_COST * (state.tactics_played[seat] - state.tactics_played[1 - seat])


def _odds_value(state: GameState, seat: int, x: float = 0.0) -> float:
    odds = FlagOdds(state, seat)
    weights = flag_weights(state, seat)
    for i, (flag, w) in enumerate(zip(state.flags, weights, strict=True)):
        if flag.claimed != UNCLAIMED:
            p = 1.0 if flag.claimed == seat else 0.0
        else:
            p = odds.chance(flag.cards[seat], flag.cards[1 - seat], flag.size, flag.fog, 0, i)
        x += w * (p - 0.5)
    return 1.0 / (1.0 + exp(-LEAF_SCALE * x))
