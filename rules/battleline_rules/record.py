"""Game records (replayable) and match-series scoring."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from .actions import parse_action
from .rulesets import RULESETS, Options
from .state import GameState, new_game


@dataclass
class GameRecord:
    """Everything needed to replay a game to the identical state."""

    ruleset: str
    options: Options
    seed: int
    actions: list[str] = field(default_factory=list)

    def replay(self) -> GameState:
        """Deal with the seed and apply every action, checking each."""
        state = new_game(self.ruleset, self.options, self.seed)
        for text in self.actions:
            state.apply(parse_action(text))
        return state

    def to_json(self) -> str:
        return json.dumps(
            {
                "ruleset": self.ruleset,
                "options": self.options.text(),
                "seed": self.seed,
                "actions": self.actions,
            }
        )

    @classmethod
    def from_json(cls, text: str) -> GameRecord:
        data = json.loads(text)
        if data["ruleset"] not in RULESETS:
            raise ValueError(f"unknown ruleset {data['ruleset']!r}")
        return cls(
            data["ruleset"],
            Options.parse(data["options"].split()),
            int(data["seed"]),
            [str(a) for a in data["actions"]],
        )


def record_of(state: GameState, actions: list[str]) -> GameRecord:
    """Bundle a game's setup with the actions applied to it."""
    if state.seed is None:
        raise ValueError("a view has no seed: records are made from full states")
    return GameRecord(state.ruleset.name, state.options, state.seed, actions)


def series_points(state: GameState) -> tuple[int, int]:
    """Points of one finished game in a series: winner 5, loser its flags (000, 001)."""
    if not state.is_over:
        raise ValueError("the game is not over")
    points = [len(state.claimed_by(s)) for s in (0, 1)]
    if state.winner is not None:
        points[state.winner] = 5
    return points[0], points[1]


def next_first_player(state: GameState) -> int:
    """Who starts the next game of a series: the winner (after a draw, the other seat)."""
    if state.winner is not None:
        return state.winner
    return 1 - state.options.first_player
