"""Search speed of the AI, on one core: `python benchmarks/ai.py [--quick]`.

Prints one `name: value` line per figure. Rates are per second of this
process's CPU time (`time.process_time`), so that other load on the machine
changes them less than it would wall-clock rates. ISMCTS is measured with the top
level's knobs (`LEVELS[5]`) and a fixed iteration count. A pure-Python loop measured in the
same process gives a machine yardstick: `ismcts_iteration_in_loop_steps` is
what one ISMCTS iteration costs in loop steps, comparable across machines.
`level5_move_cpu_s_median` is the CPU time of one searched level-5 move (its whole
budget, no time cap, every root candidate searched: what a move costs when the level
searches) over several midgame positions, and
`level5_move_loop_steps_m` the same in millions of plain-loop steps (comparable
across machines); `prob_decision_ms_median` the same for the search-free `prob` bot.
Level 5 searches only the plays its ranking scores alike (its `margin`) and makes a
clear best at once: `level5_searched_share` is the share of the positions it searched,
`level5_move_cpu_s_mean` its mean CPU per move over all of them.
`level5_game_move_cpu_s_mean` is level 5's mean CPU per move over whole games against
`prob` (the odds memos grow over a game, and every full garbage collection walks them),
`level5_game_full_collection_share` the share of those games' CPU that full collections took.
`level5_iterations_per_cpu_s` is level 5's search rate over those positions, and
`odds_leaf_speedup` how many times faster the installed odds leaf (compiled by setup.py's
second mypyc group) scores sampled worlds than its plain-Python twin, both timed in this
process (`odds_compiled` says which one the search runs).
`search_process_rss_mb_before` / `_after` are a fresh process's peak resident memory
before and after level 5 searches many midgame positions (the odds memos are what grows,
up to `odds.OUTLOOK_CACHE_SIZE`), and `search_process_rss_growth` their ratio.
`rules_core_share` is the share of search time spent inside the rules core
(legal actions, apply, clone, sample, formations); printed only when it runs as
plain Python (`BATTLELINE_PURE_PYTHON=1` at install): the profiler cannot see
into the compiled modules.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import multiprocessing
import pstats
import random
import statistics
import time

from battleline_ai import native, odds
from battleline_ai.bots import LEVELS, Bot, make_bot, parse_spec
from battleline_ai.heuristic import HeuristicBot
from battleline_ai.ismcts import IsmctsBot, SearchParams, rollout_value
from battleline_ai.rollout import POLICIES
from battleline_ai.tournament import play_game
from battleline_rules import Action, GameState, Phase, is_compiled, new_game


def midgame(seed: int = 3, actions: int = 30) -> GameState:
    """A standard position some turns in, with the seat to act in its PLAY step."""
    state, bot, rng = new_game("standard", None, seed), HeuristicBot(), random.Random(seed)
    for _ in range(actions):
        state.apply(bot.choose(state.view(state.current_player), rng))
    while state.phase is not Phase.PLAY:
        state.apply(bot.choose(state.view(state.current_player), rng))
    return state


def midgame_views(positions: int) -> list[GameState]:
    """The views the move-time figures are taken on, at various stages of the middle game."""
    views = []
    for seed in range(positions):
        state = midgame(seed=100 + seed, actions=20 + 2 * (seed % 8))
        views.append(state.view(state.current_player))
    return views


def cpu_s(spec: str, positions: int) -> list[float]:
    """CPU seconds ``spec`` takes to choose a move in each of the midgame positions."""
    bot = make_bot(spec)
    times = []
    for seed, view in enumerate(midgame_views(positions)):
        rng = random.Random(seed)
        start = time.process_time()
        bot.choose(view, rng)
        times.append(time.process_time() - start)
    return times


def level5_moves(positions: int) -> tuple[float, float]:
    """Level 5 as it plays, over the midgame positions: the share of them it searched
    (a clear best is played at once) and its mean CPU seconds per move."""
    bot = make_bot(f"ismcts:level={max(LEVELS)},seconds=none")
    assert isinstance(bot, IsmctsBot)
    searched, times = 0, []
    for seed, view in enumerate(midgame_views(positions)):
        start = time.process_time()
        searched += bot.search(view, random.Random(seed)).iterations > 0
        times.append(time.process_time() - start)
    return searched / len(times), statistics.mean(times)


class _Timed:
    """A bot that adds up the CPU seconds its inner bot spends choosing."""

    def __init__(self, bot: Bot) -> None:
        self.bot, self.name, self.moves, self.cpu_s = bot, bot.name, 0, 0.0

    def choose(self, view: GameState, rng: random.Random) -> Action:
        start = time.process_time()
        try:
            return self.bot.choose(view, rng)
        finally:
            self.moves += 1
            self.cpu_s += time.process_time() - start


def level5_games(games: int) -> tuple[float, float]:
    """Level 5 against `prob` over whole games, as the hosted AI plays: level 5's mean
    CPU seconds per move, and the share of the games' CPU in full collections."""
    level5 = _Timed(make_bot(f"ismcts:level={max(LEVELS)},seconds=none"))
    prob = make_bot("prob")
    full, started = [0.0], [0.0]

    def timed(phase: str, info: dict[str, int]) -> None:
        if info["generation"] == 2:
            if phase == "start":
                started[0] = time.process_time()
            else:
                full[0] += time.process_time() - started[0]

    start = time.process_time()
    gc.callbacks.append(timed)
    try:
        for seed in range(games):
            play_game(level5, prob, "standard", 21 + seed, 0)
    finally:
        gc.callbacks.remove(timed)
    return level5.cpu_s / level5.moves, full[0] / (time.process_time() - start)


def search_process_rss_mb(positions: int) -> tuple[float, float]:
    """A fresh process's peak resident memory (MB) before and after level 5 searches
    `positions` midgame positions, every candidate searched, as a search process does."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(_rss_around_searches, (positions,))


def _rss_around_searches(positions: int) -> tuple[float, float]:
    views = midgame_views(positions)
    bot = make_bot(f"ismcts:level={max(LEVELS)},seconds=none,margin=none")
    before = _peak_rss_mb()
    for seed, view in enumerate(views):
        bot.choose(view, random.Random(seed))
    return before, _peak_rss_mb()


def _peak_rss_mb() -> float:
    """This process's peak resident memory (Linux's VmHWM: `ru_maxrss` would count the
    parent's, which a spawned child inherits across exec)."""
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024


def level5_iterations_per_cpu_s(positions: int) -> float:
    """Level 5's search iterations per CPU second, over the move-time positions."""
    bot = make_bot(f"ismcts:level={max(LEVELS)},seconds=none,margin=none")
    assert isinstance(bot, IsmctsBot)
    iterations, start = 0, time.process_time()
    for seed, view in enumerate(midgame_views(positions)):
        iterations += bot.search(view, random.Random(seed)).iterations
    return iterations / (time.process_time() - start)


def odds_leaf_speedup(seconds: float) -> float:
    """How many times faster the installed odds leaf scores positions than the pure one.

    The positions are leaves a search meets: a few random actions on from sampled
    worlds of the midgame views, each scored from its searching seat. Each pass
    starts with empty outlook memos (in a search about a third of the sides are new),
    and the two leaves take turns for about ``seconds`` each.
    """
    pure = native.pure_modules()["odds"]
    leaves = []
    for i, view in enumerate(midgame_views(8) * 25):
        rng = random.Random(i)
        world, seat = view.sample_world(rng), view.current_player
        for _ in range(rng.randint(1, 4)):
            if not world.is_over:
                world.apply(rng.choice(world.legal_actions()))
        leaves.append((world, seat))
    counts, times = [0, 0], [0.0, 0.0]
    while min(times) < seconds:
        for k, module in enumerate((odds, pure)):
            module.clear_memos()  # cold, as a search meets it
            start = time.process_time()
            for world, seat in leaves:
                module.seen_position_value(world, seat)
            times[k] += time.process_time() - start
            counts[k] += len(leaves)
    return (counts[0] / times[0]) / (counts[1] / times[1])


def rate(fn: object, seconds: float) -> float:
    """Calls per second of ``fn()`` over about ``seconds``."""
    assert callable(fn)
    count, start = 0, time.process_time()
    while (elapsed := time.process_time() - start) < seconds:
        fn()
        count += 1
    return count / elapsed


def loop_steps_per_s(seconds: float) -> float:
    """A plain Python loop (add, compare, branch): the machine's pure-Python speed."""
    n, total, start = 0, 0, time.process_time()
    while (elapsed := time.process_time() - start) < seconds:
        for i in range(10_000):
            total += i & 7
        n += 10_000
    return n / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="short runs (noisier)")
    args = parser.parse_args()
    span = 0.5 if args.quick else 3.0
    iterations = 300 if args.quick else 2000
    state = midgame()
    view = state.view(state.current_player)
    rng = random.Random(0)

    loop = loop_steps_per_s(span)
    # The top level's search (its knobs, without its budget): what an iteration costs there.
    knobs = parse_spec(LEVELS[max(LEVELS)])[1]
    bot = IsmctsBot.from_knobs(
        {**knobs, "iterations": str(iterations), "seconds": "none", "margin": "none"}
    )
    start = time.process_time()
    result = bot.search(view, rng)
    its = result.iterations / (time.process_time() - start)
    greedy = POLICIES["greedy"]

    def full_rollout() -> None:
        rollout_value(view.sample_world(rng), 0, greedy, rng, None)

    def cut_rollout() -> None:
        rollout_value(view.sample_world(rng), 0, greedy, rng, SearchParams().depth)

    print(f"rules_core_compiled: {int(is_compiled())}")
    positions = 3 if args.quick else 15
    level5 = statistics.median(
        cpu_s(f"ismcts:level={max(LEVELS)},seconds=none,margin=none", positions)
    )
    print(f"level5_move_cpu_s_median: {level5:.3f}")
    # The same in plain-loop steps: a machine-independent cost (1 s on a 26 M-steps/s host).
    print(f"level5_move_loop_steps_m: {level5 * loop / 1e6:.1f}")
    print(f"odds_compiled: {int(native.is_compiled())}")
    share, mean = level5_moves(12 if args.quick else 40)
    print(f"level5_searched_share: {share:.2f}")
    print(f"level5_move_cpu_s_mean: {mean:.3f}")
    game_mean, collections = level5_games(1 if args.quick else 3)
    print(f"level5_game_move_cpu_s_mean: {game_mean:.3f}")
    print(f"level5_game_full_collection_share: {collections:.2f}")
    level5_rate = level5_iterations_per_cpu_s(8 if args.quick else 15)
    print(f"level5_iterations_per_cpu_s: {level5_rate:.0f}")
    print(f"odds_leaf_speedup: {odds_leaf_speedup(2 * span):.2f}")
    prob_ms = 1000 * statistics.median(cpu_s("prob", 30 if args.quick else 200))
    print(f"prob_decision_ms_median: {prob_ms:.2f}")
    print(f"ismcts_iterations_per_s: {its:.0f}")
    print(f"rollouts_per_s: {rate(full_rollout, span):.0f}")
    print(f"cut_rollouts_per_s: {rate(cut_rollout, span):.0f}")
    print(f"sample_world_per_s: {rate(lambda: view.sample_world(rng), span):.0f}")
    print(f"rules_actions_per_s: {rules_actions_per_s(span):.0f}")
    print(f"python_loop_steps_per_s: {loop:.0f}")
    print(f"ismcts_iteration_in_loop_steps: {loop / its:.0f}")
    before, after = search_process_rss_mb(30 if args.quick else 150)
    print(f"search_process_rss_mb_before: {before:.0f}")
    print(f"search_process_rss_mb_after: {after:.0f}")
    print(f"search_process_rss_growth: {after / before:.2f}")
    if not is_compiled():
        profile = cProfile.Profile()
        profile.enable()
        bot.search(view, rng)
        profile.disable()
        stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
        total = sum(row[2] for row in stats.values())
        rules = sum(row[2] for key, row in stats.items() if "battleline_rules" in key[0])
        print(f"rules_core_share: {rules / total:.2f}")


def rules_actions_per_s(seconds: float) -> float:
    """Random playouts from the start: legal_actions + apply_unchecked per second."""
    rng, count, start = random.Random(1), 0, time.process_time()
    policy = POLICIES["random"]
    while time.process_time() - start < seconds:
        state = new_game("standard", None, count)
        while not state.is_over:
            state.apply_unchecked(policy(state, rng))
            count += 1
    return count / (time.process_time() - start)


if __name__ == "__main__":
    main()
