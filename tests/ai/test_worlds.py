"""The worlds ISMCTS searches are consistent with what its seat has seen, and nothing more.

`GameState.sample_world` is wrapped for the duration of real searches, so
every world the search actually used is checked against the view it came
from and against the real game it was taken from.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest

from battleline_ai.heuristic import HeuristicBot
from battleline_ai.ismcts import IsmctsBot, SearchParams
from battleline_rules import TACTIC_DECK, GameState, Kind, Phase, Tactic, new_game

Card = int


def _hidden(state: GameState) -> list[list[int]]:
    """The places a seat may not see: both hands, both decks, the removed cards."""
    return [*state.hands, *state.decks, state.removed]


def _seen(view: GameState, seat: int) -> set[Card]:
    """Every card ``seat`` has seen where it is: own hand, table, discards, known Scout returns."""
    seen = set(view.hands[seat])
    for flag in view.flags:
        seen.update(flag.cards[0] + flag.cards[1] + [c for c, _ in flag.env])
    for pile in view.discards:
        seen.update(pile)
    seen.update(view.returned[seat])
    return {c for c in seen if c >= 0}


def _check_world(view: GameState, world: GameState, truth: GameState, seat: int) -> None:
    seen = _seen(view, seat)
    for shown, dealt in zip(_hidden(view), _hidden(world), strict=True):
        assert len(shown) == len(dealt)
        for s, d in zip(shown, dealt, strict=True):
            if s >= 0:
                assert d == s  # a card the seat knows stays where it knows it
            else:
                assert d >= 0 and d not in seen, "a seen card was dealt into a hidden place"
                assert (d >= 60) == (s == -2) or truth.ruleset.name == "deck52"
    # Same table, same discards, and every card of the game exactly once.
    assert [f.cards for f in world.flags] == [f.cards for f in view.flags]
    assert world.discards == view.discards

    def everything(state: GameState) -> Counter[Card]:
        cards = Counter(c for place in _hidden(state) for c in place)
        cards.update(c for pile in state.discards for c in pile)
        for flag in state.flags:
            cards.update(flag.cards[0] + flag.cards[1] + [c for c, _ in flag.env])
        return cards

    assert everything(world) == everything(truth)
    assert max(everything(world).values()) == 1


@pytest.mark.parametrize("ruleset", ["standard", "deck52"])
def test_searched_worlds_hide_nothing_and_invent_nothing(
    ruleset: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = GameState.sample_world
    current: dict[str, object] = {}
    checked = [0]

    def spy(self: GameState, rng: random.Random) -> GameState:
        world = original(self, rng)
        truth, seat = current["truth"], current["seat"]
        assert isinstance(truth, GameState) and isinstance(seat, int)
        assert self.viewer == seat
        _check_world(self, world, truth, seat)
        checked[0] += 1
        return world

    monkeypatch.setattr(GameState, "sample_world", spy)
    searcher = IsmctsBot(SearchParams(iterations=25, seconds=None, depth=2))
    helper, rng = HeuristicBot(), random.Random(1)
    for seed in range(3):
        state = new_game(ruleset, None, 50 + seed)
        while not state.is_over:
            seat = state.current_player
            current.update(truth=state, seat=seat)
            bot = searcher if seat == 0 else helper
            action = bot.choose(state.view(seat), rng)
            state.apply(action)
    assert checked[0] > 100


def _scouted(seed: int) -> GameState:
    """A standard game in which seat 0 has just put two cards back with Scout: seat 0
    draws tactics until it holds Scout and plays it at once; everything else is chosen
    at random (seeded), so the game does not depend on any bot's play."""
    state, rng = new_game("standard", None, seed), random.Random(seed)
    while not state.returned[0] or state.phase is Phase.SCOUT_RETURN:
        assert not state.is_over, f"seed {seed}: the game ended before seat 0 used Scout"
        actions = sorted(state.legal_actions())
        if state.current_player == 0:
            scout = [a for a in actions if a.kind is Kind.PLAY and a.card == Tactic.SCOUT]
            draw = [a for a in actions if a.kind is Kind.DRAW and a.deck == TACTIC_DECK]
            actions = scout or draw or actions
        state.apply(rng.choice(actions))
    return state


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_scout_returns_stay_where_the_seat_put_them(seed: int) -> None:
    """After Scout the seat knows its returned cards lie on top of the decks; worlds agree."""
    state = _scouted(seed)
    view = state.view(0)
    assert len(view.returned[0]) == 2
    for k in range(50):
        world = view.sample_world(random.Random(k))
        _check_world(view, world, state, 0)
        for card in view.returned[0]:
            assert card in world.decks[0] + world.decks[1] + world.hands[1]
