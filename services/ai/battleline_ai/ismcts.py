"""Single-observer information-set MCTS (Cowling, Powley & Whitehouse 2012).

The tree belongs to the searching seat's information set: every iteration
samples one world consistent with the view (`GameState.sample_world`), walks
the tree choosing only among children whose actions are legal in that world
(UCB1 with availability counts: a child's exploration term counts the
iterations in which it could have been chosen, not its parent's visits),
expands one action, plays a cheap rollout (cut after ``depth`` turns and
scored by `evaluation.position_value`), and backs the result up from the
point of view of whoever chose each action, read from the world at that step
(the seat to act can change mid-turn, e.g. Mud's discard).

Only the view is ever looked at. Claims are always made at once (never
worse: a claimed flag is locked for good), so the tree does not branch on
them. Root candidates are the heuristic's best ``width`` plays, searched in
its order; inner nodes see every legal action, or with ``inner_width`` only
the best-fitting troop plays (a plausible opponent, a narrower tree). Once
both decks are empty nothing is hidden but the opponent's hand, and a won
position is solved exactly instead (`endgame`).
"""

from __future__ import annotations

import gc
import math
import multiprocessing
import random
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, fields, replace
from enum import StrEnum
from typing import Any, get_args, get_type_hints

from battleline_rules import Action, GameState, Kind, Phase

from . import endgame, evaluation, odds
from .heuristic import HeuristicBot, ranked_plays
from .prob import ProbBot, prob_policy
from .processes import spawned_pool
from .rollout import POLICIES as CHEAP_POLICIES
from .rollout import Policy, likely_plays

DEFAULT_TIME_CAP = 10.0


class Rollout(StrEnum):
    """How a rollout picks moves: a cheap policy of `rollout.POLICIES`, or `prob` itself
    (about seventy times dearer per move, and the opponent a level 5 meets)."""

    GREEDY = "greedy"
    RANDOM = "random"
    PROB = "prob"


POLICIES: dict[str, Policy] = {**CHEAP_POLICIES, Rollout.PROB: prob_policy}


class Final(StrEnum):
    """Which root child is played: the most visited, or the best mean value."""

    VISITS = "visits"
    VALUE = "value"


class Root(StrEnum):
    """The root's policy: UCB1, or sequential halving over shared worlds."""

    UCB = "ucb"
    HALVING = "halving"


class Leaf(StrEnum):
    """How a cut rollout is scored: the heuristic's estimate, exact odds, or exact odds
    judged from the searching seat's view of the world."""

    HEURISTIC = "heuristic"
    ODDS = "odds"
    SEEN = "seen"


class Rank(StrEnum):
    """Who ranks the root candidates and takes the small decisions."""

    HEURISTIC = "heuristic"
    PROB = "prob"


LEAVES = {
    Leaf.HEURISTIC: evaluation.position_value,
    Leaf.ODDS: odds.position_value,
    Leaf.SEEN: odds.seen_position_value,
}


@dataclass(frozen=True)
class SearchParams:
    """The knobs. ``iterations`` and ``seconds`` are budgets per move (None: unbounded)."""

    iterations: int | None = 300
    seconds: float | None = DEFAULT_TIME_CAP
    c: float = 0.7  # UCB1 exploration constant (rewards in [0, 1])
    rollout: Rollout = Rollout.GREEDY
    depth: int | None = 6  # rollout turns before the position is scored; None: to the end
    width: int = 8  # root candidates taken from the heuristic's ranking; 0: all
    # Root candidates only within this much of the ranking's best score (None: no limit);
    # a play the ranking prefers by more is made without searching.
    margin: float | None = None
    inner_width: int = 5  # inner PLAY nodes branch on the best-fitting troop plays; 0: all
    bias: float = 0.0  # progressive bias toward the heuristic's ranking at the root
    final: Final = Final.VISITS
    root: Root = Root.UCB
    workers: int = 1  # root parallelism across processes
    leaf: Leaf = Leaf.HEURISTIC
    rank: Rank = Rank.HEURISTIC
    charge: float = 0.0  # the ranking's price on a troop's best use elsewhere (`Board`)
    endgame: bool = True  # once only the opponent's hand is hidden, play a proven win
    # Search on a move made unsearched too (a clear best, a proven win), the result unused:
    # the CPU a move costs then tells nothing of the hand (the hosted AI's own moves).
    conceal: bool = False

    def __post_init__(self) -> None:
        if self.iterations is None and self.seconds is None:
            raise ValueError("ismcts needs a budget: iterations= or seconds=")

    @classmethod
    def from_knobs(cls, knobs: dict[str, str]) -> SearchParams:
        """Parameters from ``key=value`` text: each value parsed by its field's type
        (an enum refuses a value it does not name); ``none``/``end`` mean no limit."""
        types = get_type_hints(cls)
        names = [f.name for f in fields(cls)]
        given: dict[str, Any] = {}
        for key, value in knobs.items():
            if key not in names:
                raise ValueError(f"unknown ismcts option {key!r}: use level or {', '.join(names)}")
            kind = types[key]
            if value.lower() in ("none", "end"):
                given[key] = None
            elif kind is bool:
                if value.lower() not in ("0", "1", "true", "false", "yes", "no", "on", "off"):
                    raise ValueError(f"{key} must be 1 or 0")
                given[key] = value.lower() in ("1", "true", "yes", "on")
            elif isinstance(kind, type) and issubclass(kind, StrEnum):
                if value not in kind.__members__.values():
                    raise ValueError(f"{key} must be one of {', '.join(kind)}")
                given[key] = kind(value)
            else:
                number = float if float in (kind, *get_args(kind)) else int
                given[key] = number(value)
        return replace(cls(), **given)


class Node:
    """One action's node. No link to its parent (a walk keeps its path): without cycles
    the tree is freed by reference counting once the search returns."""

    __slots__ = ("avail", "children", "player", "reward", "visits")

    def __init__(self, player: int) -> None:
        self.player = player  # the seat that chose the action leading here
        self.children: dict[Action, Node] = {}
        self.visits = 0
        self.avail = 1
        self.reward = 0.0


@dataclass
class SearchResult:
    """The move and what backs it: for the hint/analysis RPC and for tests."""

    action: Action
    value: float  # estimated chance the searching seat wins, after ``action``
    iterations: int
    seconds: float
    stats: dict[Action, tuple[int, float]] = field(default_factory=dict)  # visits, reward


def _diverse(ranked: list[tuple[float, Action]], width: int) -> list[tuple[float, Action]]:
    """The ``width`` root candidates: each card's best use first, in rank order, then the
    next best uses. The hard choice is which card to give up; a ranking's top few are
    often one strong card at several flags."""
    firsts: dict[int, tuple[float, Action]] = {}
    for item in ranked:
        firsts.setdefault(item[1].card, item)
    chosen = list(firsts.values())[:width]
    taken = {a for _, a in chosen}
    chosen += [item for item in ranked if item[1] not in taken][: width - len(chosen)]
    chosen.sort(key=lambda sa: -sa[0])
    return chosen


def _candidates(world: GameState, width: int) -> list[Action]:
    """Actions an inner node branches on: one claim at a time, else the likeliest plays."""
    actions = world.legal_actions()
    if actions and actions[0].kind is Kind.CLAIM:
        return actions[:1]
    if width > 0 and world.phase is Phase.PLAY and len(actions) > width:
        return likely_plays(world, width)
    return actions


def _descend(
    world: GameState,
    node: Node,
    legal: list[Action],
    c: float,
    inner: int,
    rng: random.Random,
    root: Node | None = None,
    roots: dict[Action, float] | None = None,
    bias: float = 0.0,
) -> list[Node]:
    """One tree walk from ``node`` in ``world`` (changed in place): UCB1 down, expand one.

    Returns the path below ``node`` (``node`` first) for the backup.
    """
    path = [node]
    while not world.is_over:
        untried = [a for a in legal if a not in node.children]
        if untried:
            action = untried[0] if node is root else rng.choice(untried)
            child = Node(world.current_player)
            node.children[action] = child
            world.apply_unchecked(action)
            path.append(child)
            break
        best, best_ucb = None, -math.inf
        for action in legal:
            child = node.children[action]
            n = child.visits
            ucb = child.reward / n + c * math.sqrt(math.log(child.avail) / n)
            if node is root and roots is not None:
                ucb += bias * roots[action] / (n + 1)
            child.avail += 1
            if ucb > best_ucb:
                best, best_ucb = action, ucb
        assert best is not None
        node = node.children[best]
        world.apply_unchecked(best)
        path.append(node)
        legal = _candidates(world, inner)
    return path


def _backup(path: list[Node], seat: int, value: float) -> None:
    for step in path:
        step.visits += 1
        step.reward += value if step.player == seat else 1.0 - value


# Every this many searches, what earlier searches froze goes back to the collector and a
# full collection runs before the search (about a second with full memos, inside that
# search's time, so a timed search searches less but still answers within its budget):
# cyclic garbage frozen by mistake (a search makes none, see `Node`) cannot pile up.
SEARCHES_PER_FULL_COLLECTION = 1000
_searches = 0


@contextmanager
def _collector_paused() -> Iterator[None]:
    """No cyclic garbage collection while searching, nor of what the search leaves alive.

    A search allocates millions of short-lived objects, all freed by reference
    counting (its tree too: `Node` holds no parent, so the tree has no cycles), and
    leaves the process-wide odds memos with some hundred thousand new entries. With
    the collector on, a level-5 search ran about half as many iterations per CPU
    second; collecting after each search still walked those entries (a tenth of
    level 5's CPU), and the full collections they set off a few times a game walked
    all the memos (0.4 s each). So what a search leaves alive is frozen (`gc.freeze`:
    out of the collector's sight, still freed by reference counting when a memo
    drops it), and every `SEARCHES_PER_FULL_COLLECTION` searches it is all collected.
    """
    global _searches
    enabled = gc.isenabled()
    if enabled:
        _searches += 1
        if _searches % SEARCHES_PER_FULL_COLLECTION == 0:
            gc.unfreeze()
            gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.freeze()
            gc.enable()


def _run(
    view: GameState,
    roots: dict[Action, float],
    params: SearchParams,
    rng: random.Random,
    deadline: float,
) -> tuple[dict[Action, tuple[int, float]], int]:
    """The search loop on one core: stats of the root's children, and iterations done."""
    with _collector_paused():
        if params.root is Root.HALVING and params.iterations is not None:
            return _run_halving(view, roots, params, rng, deadline)
        return _run_ucb(view, roots, params, rng, deadline)


def _run_ucb(
    view: GameState,
    roots: dict[Action, float],
    params: SearchParams,
    rng: random.Random,
    deadline: float,
) -> tuple[dict[Action, tuple[int, float]], int]:
    """UCB1 at the root, SO-ISMCTS below."""
    seat = view.current_player
    policy = POLICIES[params.rollout]
    leaf = LEAVES[params.leaf]
    root = Node(1 - seat)
    c, bias, limit, inner = params.c, params.bias, params.iterations, params.inner_width
    done = 0
    legal = list(roots)
    while (limit is None or done < limit) and time.perf_counter() < deadline:
        world = view.sample_world(rng)
        path = _descend(world, root, legal, c, inner, rng, root, roots, bias)
        _backup(path, seat, rollout_value(world, seat, policy, rng, params.depth, leaf))
        done += 1
    return {a: (n.visits, n.reward) for a, n in root.children.items()}, done


def _run_halving(
    view: GameState,
    roots: dict[Action, float],
    params: SearchParams,
    rng: random.Random,
    deadline: float,
) -> tuple[dict[Action, tuple[int, float]], int]:
    """Sequential halving at the root (Karnin et al. 2013), every candidate on the same worlds.

    The budget is split over ceil(log2(candidates)) rounds; in a round each
    surviving candidate gets the same number of iterations, and the better
    half (by mean reward) survives. The candidates of one batch are searched
    on the same sampled world with the same rollout seed (common random
    numbers), so the luck of the deal cancels out of their comparison. Below
    the root the tree is SO-ISMCTS as in `_run`.
    """
    seat = view.current_player
    policy = POLICIES[params.rollout]
    leaf = LEAVES[params.leaf]
    c, inner, depth = params.c, params.inner_width, params.depth
    assert params.iterations is not None
    root = Node(1 - seat)
    order = list(roots)
    for action in order:
        root.children[action] = Node(seat)
    alive = order[:]
    rounds = max(1, math.ceil(math.log2(len(alive))))
    budget = params.iterations
    done = 0
    for r in range(rounds):
        share = max(1, (budget - done) // ((rounds - r) * len(alive)))
        for _ in range(share):
            if time.perf_counter() >= deadline:
                break
            world = view.sample_world(rng)
            seed = rng.getrandbits(32)
            for action in alive:
                w = world.clone()
                child = root.children[action]
                w.apply_unchecked(action)
                walk = random.Random(seed)
                path = _descend(w, child, _candidates(w, inner), c, inner, walk)
                _backup(path, seat, rollout_value(w, seat, policy, walk, depth, leaf))
                done += 1
        if len(alive) > 1:
            # Keep the better half; ties keep the heuristic's order.
            ranked = sorted(
                alive,
                key=lambda a: -root.children[a].reward / max(1, root.children[a].visits),
            )
            alive = ranked[: max(1, math.ceil(len(alive) / 2))]
    return {a: (n.visits, n.reward) for a, n in root.children.items()}, done


def rollout_value(
    world: GameState,
    seat: int,
    policy: Any,
    rng: random.Random,
    depth: int | None,
    leaf: Any = evaluation.position_value,
) -> float:
    """Play ``depth`` turns (None: to the end) with ``policy``; ``seat``'s chance of winning."""
    turns_left = depth if depth is not None else 10**9
    ply = world.ply
    while not world.is_over and turns_left > 0:
        world.apply_unchecked(policy(world, rng))
        if world.ply != ply:
            ply = world.ply
            turns_left -= 1
    return leaf(world, seat)


def _worker(job: tuple[GameState, dict[Action, float], SearchParams, int, float]) -> Any:
    view, roots, params, seed, deadline = job
    return _run(view, roots, params, random.Random(seed), deadline)


class IsmctsBot:
    """ISMCTS over the PLAY step; the heuristic takes the small decisions (draws, Scout, Mud)."""

    name = "ismcts"

    def __init__(self, params: SearchParams | None = None) -> None:
        self.params = params or SearchParams()
        helper_type = ProbBot if self.params.rank is Rank.PROB else HeuristicBot
        self.helper: HeuristicBot = helper_type(charge=self.params.charge)
        self._pool: Any = None
        if self.params.workers > 1:
            # Started once with the bot, so no move pays for starting processes.
            self._pool = spawned_pool(self.params.workers - 1)

    @classmethod
    def from_knobs(cls, knobs: dict[str, str]) -> IsmctsBot:
        return cls(SearchParams.from_knobs(knobs))

    def choose(self, view: GameState, rng: random.Random) -> Action:
        actions = view.legal_actions()
        if len(actions) == 1:
            return actions[0]
        if actions[0].kind is Kind.CLAIM or view.phase is not Phase.PLAY:
            return self._solved(view) or self.helper.choose(view, rng)
        return self.search(view, rng).action

    def _solved(self, view: GameState) -> Action | None:
        """A proven win, once nothing is hidden but the opponent's hand (`endgame`)."""
        return endgame.solve(view) if self.params.endgame else None

    def search(self, view: GameState, rng: random.Random) -> SearchResult:
        """Search the seat's decision in ``view`` within the budget."""
        start = time.perf_counter()
        params = self.params
        # Stop searching a little early, so that merging and answering fit in the budget.
        budget = params.seconds if params.seconds is not None else math.inf
        deadline = start + budget * 0.95
        hard_deadline = start + budget * 0.99
        actions = view.legal_actions()
        won = self._solved(view)
        if won is not None and not params.conceal:
            return SearchResult(won, 1.0, 0, time.perf_counter() - start)
        every = (
            ranked_plays(self.helper.board(view), actions)
            if view.phase is Phase.PLAY
            else [(0.0, a) for a in actions]
        )
        if won is not None:
            self._conceal(view, every, rng, deadline)
            return SearchResult(won, 1.0, 0, time.perf_counter() - start)
        ranked = every
        if params.margin is not None and ranked:
            ranked = [sa for sa in ranked if sa[0] >= ranked[0][0] - params.margin]
        if params.width > 0:
            ranked = _diverse(ranked, params.width)
        if len(ranked) == 1:
            action = ranked[0][1]
            self._conceal(view, every, rng, deadline)
            return SearchResult(
                action, self._value_after(view, action), 0, time.perf_counter() - start
            )
        # Root candidates in the heuristic's order, each with its score below the best (<= 0).
        roots = {a: score - ranked[0][0] for score, a in ranked}
        if params.workers > 1:
            stats, done = self._parallel(view, roots, rng, deadline, hard_deadline)
        else:
            stats, done = _run(view, roots, params, rng, deadline)
        order = {a: i for i, a in enumerate(roots)}
        first = ranked[0][1]

        # Sequential halving leaves its finalists with the most visits (at least twice
        # those of any candidate dropped before): the best mean among them is its pick.
        top = max((v for v, _ in stats.values()), default=0)
        halving = params.root is Root.HALVING and params.iterations is not None

        def key(item: tuple[Action, tuple[int, float]]) -> tuple[float, float, int]:
            action, (visits, reward) = item
            if halving:
                return float(2 * visits >= top), reward / max(visits, 1), -order[action]
            main = visits if params.final is Final.VISITS else reward / max(visits, 1)
            return main, 0.0, -order[action]

        action, (visits, reward) = max(stats.items(), key=key) if stats else (first, (0, 0.0))
        value = reward / visits if visits else 0.5
        return SearchResult(action, value, done, time.perf_counter() - start, stats)

    def _conceal(self, view: GameState, ranked: list[tuple[float, Action]],
                 rng: random.Random, deadline: float) -> None:
        """With `conceal`, search the ranking's candidates as if undecided and drop the
        result: a move made without a search then costs the CPU a searched one does.
        (Twenty-sixth audit: a player's hint, run beside the AI's thinking, took twice
        as long when the AI searched, telling one bit of its hand a move.)"""
        if not self.params.conceal:
            return
        # A search's cost depends on how many plays it weighs (at level 5 two cost about
        # 0.26 s of CPU, six 0.16 s) and on the position: tied plays come two to eight, so
        # the number is drawn, and a clear best's positions cost about a fifth more an
        # iteration than tied ones (200 level-5 decisions), so a fifth fewer are run.
        params = self.params
        if params.width > 0:
            ranked = _diverse(ranked, rng.randint(2, max(2, params.width)))
        if params.iterations is not None:
            params = replace(params, iterations=max(1, params.iterations * 4 // 5))
        if len(ranked) > 1:
            _run(view, {a: score - ranked[0][0] for score, a in ranked}, params, rng, deadline)

    def _value_after(self, view: GameState, action: Action) -> float:
        """The leaf's value of the position after an unsearched move: the win estimate of
        a move the ranking made alone."""
        seat = view.current_player
        after = view.clone()
        after.apply_unchecked(action)
        return LEAVES[self.params.leaf](after, seat)

    def _parallel(
        self,
        view: GameState,
        roots: dict[Action, float],
        rng: random.Random,
        deadline: float,
        hard_deadline: float,
    ) -> tuple[dict[Action, tuple[int, float]], int]:
        """Root parallelism: independent trees, root statistics summed.

        This process grows one tree itself; the others grow in the pool. A
        worker that has not answered by ``hard_deadline`` (a loaded machine
        can keep a process waiting) is left out, so it never delays the move.
        """
        params = self.params
        workers = params.workers
        share = replace(params, workers=1)
        if params.iterations is not None:
            share = replace(share, iterations=-(-params.iterations // workers))
        if self._pool is None:
            self._pool = spawned_pool(workers - 1)
        pending = [
            self._pool.apply_async(_worker, ((view, roots, share, rng.getrandbits(63), deadline),))
            for _ in range(workers - 1)
        ]
        merged, total = _run(view, roots, share, rng, deadline)
        merged = dict(merged)
        for job in pending:
            timeout = None if math.isinf(hard_deadline) else hard_deadline - time.perf_counter()
            try:
                stats, done = job.get(timeout=max(0.0, timeout) if timeout is not None else None)
            except multiprocessing.TimeoutError:
                continue
            total += done
            for action, (visits, reward) in stats.items():
                v, r = merged.get(action, (0, 0.0))
                merged[action] = (v + visits, r + reward)
        return merged, total

    def close(self) -> None:
        if self._pool is not None:
            self._pool.terminate()
            self._pool = None

    def __del__(self) -> None:
        self.close()
