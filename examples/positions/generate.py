"""Regenerate the example positions by playing seeded random games with the rules core.

Each example is the first position, over seeds from a fixed start, that shows what it
is meant to show; rerunning gives the same files. Run from the repo root:

    python examples/positions/generate.py
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

from battleline_rules import GameState, Kind, Phase, Tactic, dump_position, load_position, new_game

HERE = Path(__file__).parent
MAX_SEEDS = 2000


def _random_play(rng: random.Random, state: GameState) -> None:
    """One uniformly random legal action, claims chosen rarely so open fights stay open."""
    actions = state.legal_actions()
    others = [a for a in actions if a.kind is not Kind.CLAIM]
    pick = rng.choice(actions if not others or rng.random() < 0.2 else others)
    state.apply(pick)


def _find(ruleset: str, wanted: Callable[[GameState], bool], first_seed: int) -> GameState:
    """The first position along seeded random games where ``wanted`` holds."""
    for seed in range(first_seed, first_seed + MAX_SEEDS):
        state, rng = new_game(ruleset, seed=seed), random.Random(seed)
        while not state.is_over:
            if wanted(state):
                return state
            _random_play(rng, state)
    raise SystemExit(f"no {ruleset} position found in {MAX_SEEDS} seeds")


def _verdicts(state: GameState) -> list[tuple[bool, bool]]:
    """(granted, refuted by a completion) for each open flag the acting seat has completed."""
    seat = state.player
    out = []
    for i, flag in enumerate(state.flags):
        if flag.claimed < 0 and len(flag.cards[seat]) == flag.size:
            verdict = state.claim_verdict(i, seat)
            out.append((verdict.granted, bool(verdict.refutation)))
    return out


def provable_and_unprovable(state: GameState) -> bool:
    """Claim step, one flag the acting seat can prove and one a completion refutes."""
    if state.phase is not Phase.FINISH or state.claimed_by(0) + state.claimed_by(1) == []:
        return False
    verdicts = _verdicts(state)
    return any(g for g, _ in verdicts) and any(r for g, r in verdicts if not g)


def fog_mud_leader(state: GameState) -> bool:
    """Fog and Mud both on the table, and a Leader at a flag."""
    env = {c for f in state.flags for c, _ in f.env}
    on_sides = {c for f in state.flags for side in f.cards for c in side}
    leaders = {Tactic.ALEXANDER, Tactic.DARIUS}
    return (
        state.phase is Phase.PLAY and {Tactic.FOG, Tactic.MUD} <= env and bool(leaders & on_sides)
    )


def deck52_midgame(state: GameState) -> bool:
    """A deck52 position with a claimed flag and a claim available now."""
    return bool(state.claimed_by(0) + state.claimed_by(1)) and any(
        a.kind is Kind.CLAIM for a in state.legal_actions()
    )


def main() -> None:
    examples = {
        "standard-midgame.txt": (_find("standard", provable_and_unprovable, 0), None),
        "standard-fog-mud-leader-view.txt": (_find("standard", fog_mud_leader, 1), "to-act"),
        "deck52-midgame.txt": (_find("deck52", deck52_midgame, 0), None),
    }
    for name, (state, view) in examples.items():
        shown = state.view(state.current_player) if view == "to-act" else state
        text = dump_position(shown)
        assert dump_position(load_position(text)) == text, name
        header = f"# {name}: made by generate.py from seed {state.seed}, ply {state.ply}\n"
        (HERE / name).write_text(header + text, encoding="utf-8")
        print(f"{name}: seed {state.seed}, ply {state.ply}")


if __name__ == "__main__":
    main()
