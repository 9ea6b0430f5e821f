"""Property tests over random complete games in every ruleset.

Each example is one whole game, dealt from a hypothesis-chosen seed and
played by a seeded random policy; invariants are checked after every action,
the costlier ones (round trips, illegal actions, sampled worlds) at random
points. Hypothesis runs derandomized so CI sees the same games every time.
"""

from __future__ import annotations

import contextlib
import random
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from battleline_rules import (
    SPECTATOR,
    UNKNOWN_TACTIC,
    UNKNOWN_TROOP,
    Action,
    ClaimTiming,
    Event,
    GameState,
    Kind,
    Options,
    RuleError,
    dump_position,
    format_action,
    load_position,
    new_game,
    parse_action,
    record_of,
    redact_event,
)
from battleline_rules.cards import CARD_COUNT, Tactic, card_name, is_tactic

# A game needs ~80-140 actions; anything near this bound means a loop.
MAX_ACTIONS = 2000
# Chance, per action, of running the costlier checks.
DEEP_CHECK_RATE = 0.12

CONFIGS: dict[str, tuple[str, Options | None, int]] = {
    # id: (ruleset, options, games)
    "standard": ("standard", None, 450),
    "basic": ("basic", None, 350),
    "deck52": ("deck52", None, 350),
    "standard-start-of-turn": (
        "standard",
        Options(claim_timing=ClaimTiming.START_OF_TURN),
        350,
    ),
}


def choose(rng: random.Random, legal: list[Action]) -> Action:
    """Half the time uniform over actions, else uniform over kinds first.

    Picking a kind first makes rare kinds (pass, claim, scout, guile) common
    enough that every code path is walked in a few hundred games.
    """
    moving_mud = [a for a in legal if a.target == Tactic.MUD]
    if moving_mud and rng.random() < 0.5:
        # Mud leaving a 4-card side is the rarest path (a forced discard); seek it out.
        return rng.choice(moving_mud)
    if rng.random() < 0.5:
        return rng.choice(legal)
    kinds = sorted({a.kind for a in legal})
    kind = rng.choice(kinds)
    return rng.choice([a for a in legal if a.kind is kind])


def locations(state: GameState) -> list[int]:
    """Every card in every place a card can be: one entry per card held."""
    cards = [*state.hands[0], *state.hands[1], *state.decks[0], *state.decks[1]]
    cards += state.removed + state.discards[0] + state.discards[1]
    for flag in state.flags:
        cards += flag.cards[0] + flag.cards[1] + [c for c, _ in flag.env]
    return cards


def check_conservation(state: GameState) -> None:
    """Every card of the ruleset is in exactly one place."""
    expected = Counter({c: 1 for c in (*state.ruleset.troops, *state.ruleset.tactics)})
    assert Counter(locations(state)) == expected, dump_position(state)


def tokens(text: str) -> set[str]:
    """The card names in a position text (``R7#3`` -> ``R7``, ``FOG/1`` -> ``FOG``)."""
    words = set()
    for line in text.splitlines():
        _, _, value = line.partition(":")
        for word in value.replace("|", " ").split():
            words.add(word.split("#")[0].split("/")[0].split("*")[0].upper())
    return words


def check_views(state: GameState) -> None:
    """A seat's view shows its own hand and the table, never the other hand or deck order."""
    for viewer in (0, 1, SPECTATOR):
        view = state.view(viewer)
        text = dump_position(view)
        if state.is_over:
            assert view.seed == state.seed
            assert locations(view) == locations(state)
            continue
        assert view.seed is None
        assert "seed: -" in text
        known = set(state.returned[viewer]) if viewer != SPECTATOR else set()
        secret: set[int] = set(state.removed)
        for seat in (0, 1):
            if seat != viewer:
                secret.update(state.hands[seat])
        for deck in state.decks:
            secret.update(deck)
        secret -= known
        hidden = [*state.removed, *state.decks[0], *state.decks[1]]
        shown = [*view.removed, *view.decks[0], *view.decks[1]]
        assert len(shown) == len(hidden)
        for real, seen in zip(hidden, shown, strict=True):
            if real in known:
                assert seen == real
            else:
                assert seen == (UNKNOWN_TACTIC if is_tactic(real) else UNKNOWN_TROOP)
        for seat in (0, 1):  # a hidden hand in a fixed order: known cards, troops, tactics
            if seat != viewer:
                hand = state.hands[seat]
                tactics = sum(1 for c in hand if is_tactic(c) and c not in known)
                troops = len(hand) - tactics - sum(1 for c in hand if c in known)
                assert view.hands[seat] == sorted(c for c in hand if c in known) + \
                    [UNKNOWN_TROOP] * troops + [UNKNOWN_TACTIC] * tactics
        assert all(c == UNKNOWN_TROOP for c in view.removed)
        names = tokens(text)
        leaked = [card_name(c) for c in secret if card_name(c).upper() in names]
        assert not leaked, f"view {viewer} shows {leaked}\n{text}"
        if viewer != SPECTATOR:
            assert view.hands[viewer] == state.hands[viewer]
            assert not view.returned[1 - viewer]
        else:
            assert not view.returned[0] and not view.returned[1]
        # Public parts are untouched.
        for mine, real_flag in zip(view.flags, state.flags, strict=True):
            assert mine.cards == real_flag.cards and mine.env == real_flag.env
            assert mine.claimed == real_flag.claimed
        assert view.discards == state.discards


def check_round_trip(state: GameState) -> None:
    """Positions (full and views) round-trip exactly, and play on identically."""
    text = dump_position(state)
    loaded = load_position(text)
    assert dump_position(loaded) == text
    assert loaded.legal_actions() == state.legal_actions()
    for viewer in (0, 1, SPECTATOR):
        view_text = dump_position(state.view(viewer))
        assert dump_position(load_position(view_text)) == view_text


def check_actions_format(legal: list[Action]) -> None:
    """Every legal action survives its text notation, and no action is offered twice."""
    assert len(set(legal)) == len(legal)
    for action in legal:
        assert parse_action(format_action(action)) == action


def illegal_candidates(state: GameState, rng: random.Random) -> list[Action]:
    """Actions that are plausibly wrong now: other phases, foreign cards, bad flags."""
    seat = state.current_player
    hand = state.hands[seat]
    n = len(state.flags)
    others = [c for c in range(CARD_COUNT) if c not in hand]
    card = rng.choice(hand) if hand else rng.choice(others)
    claimed = [i for i, f in enumerate(state.flags) if f.claimed >= 0]
    candidates = [
        # Legal in another phase.
        Action(Kind.DRAW, deck=rng.randrange(2)),
        Action(Kind.SCOUT_DRAW, deck=rng.randrange(2)),
        Action(Kind.SCOUT_RETURN, card=card),
        Action(Kind.PLAY, card=card, flag=rng.randrange(n)),
        Action(Kind.CLAIM, flag=rng.randrange(n)),
        Action(Kind.PASS),
        Action(Kind.END),
        Action(Kind.MUD_DISCARD, card=card, flag=rng.randrange(n)),
        # A card not in hand (on the table, in a deck, the other hand, another ruleset).
        Action(Kind.PLAY, card=rng.choice(others), flag=rng.randrange(n)),
        # Flags out of range.
        Action(Kind.PLAY, card=card, flag=n + rng.randrange(3)),
        Action(Kind.CLAIM, flag=n + rng.randrange(3)),
        Action(Kind.TRAITOR, card=69, flag=rng.randrange(n), target=card, to_flag=n),
    ]
    for flag in claimed:
        candidates += [Action(Kind.PLAY, card=card, flag=flag), Action(Kind.CLAIM, flag=flag)]
    # Random fields, kept to what the text notation can say.
    for _ in range(4):
        raw = Action(
            Kind(rng.randrange(len(Kind))),
            card=rng.randrange(-2, CARD_COUNT),
            flag=rng.randrange(-1, n + 2),
            target=rng.randrange(-2, CARD_COUNT),
            to_flag=rng.randrange(-1, n + 2),
            deck=rng.randrange(2),
        )
        with contextlib.suppress(ValueError):
            candidates.append(parse_action(format_action(raw)))
    legal = set(state.legal_actions())
    return [a for a in candidates if a not in legal]


def check_illegal(state: GameState, rng: random.Random) -> int:
    """Each illegal action raises RuleError and leaves the state as it was."""
    before = dump_position(state)
    legal = list(state.legal_actions())
    candidates = illegal_candidates(state, rng)
    for action in candidates:
        with pytest.raises(RuleError) as caught:
            state.apply(action)
        assert caught.value.message, format_action(action)
        assert dump_position(state) == before, format_action(action)
        assert state.legal_actions() == legal
    return len(candidates)


def check_sample_world(state: GameState, viewer: int, rng: random.Random) -> None:
    """A sampled world agrees with the view and hides only unseen cards."""
    view = state.view(viewer)
    world = view.sample_world(rng)
    assert world.viewer is None
    check_conservation(world)
    view_text = dump_position(view)
    world_view = world.view(viewer)
    world_view.seed = None
    assert dump_position(world_view) == view_text
    for d in (0, 1):
        assert len(world.decks[d]) == len(state.decks[d])
    for s in (0, 1):
        assert len(world.hands[s]) == len(state.hands[s])
        assert sum(map(is_tactic, world.hands[s])) == sum(map(is_tactic, state.hands[s]))
    assert len(world.removed) == len(state.removed)
    assert world.discards == state.discards
    for mine, real in zip(world.flags, state.flags, strict=True):
        assert (mine.cards, mine.seqs, mine.env, mine.claimed) == (
            real.cards,
            real.seqs,
            real.env,
            real.claimed,
        )
    seen: set[int] = set(state.discards[0] + state.discards[1])
    for f in state.flags:
        seen.update(f.cards[0] + f.cards[1] + [c for c, _ in f.env])
    if viewer != SPECTATOR:
        assert world.hands[viewer] == state.hands[viewer]
        seen.update(state.hands[viewer])
        seen.update(state.returned[viewer])
    # Placeholders are where the sampler dealt; none may get a card the viewer has seen.
    dealt: list[int] = []
    for shown, filled in (
        (view.removed, world.removed),
        (view.decks[0], world.decks[0]),
        (view.decks[1], world.decks[1]),
        (view.hands[0], world.hands[0]),
        (view.hands[1], world.hands[1]),
    ):
        dealt += [w for v, w in zip(shown, filled, strict=True) if v < 0]
    assert not seen & set(dealt), (viewer, sorted(seen & set(dealt)))
    if viewer == state.current_player:
        assert world.legal_actions() == state.legal_actions()


def check_events(event_seat: int, event: Event) -> None:
    """Other seats learn neither the card drawn nor the card put back with Scout."""
    for viewer in (1 - event_seat, SPECTATOR):
        seen = redact_event(event, viewer)
        assert seen.drawn < 0
        if seen.action.kind is Kind.SCOUT_RETURN:
            assert seen.action.card < 0


def play_checked_game(ruleset: str, options: Options | None, seed: int) -> GameState:
    """One random game from ``seed`` with every invariant checked along the way."""
    state = new_game(ruleset, options, seed)
    rng = random.Random(seed ^ 0x5EED)
    texts: list[str] = []
    check_conservation(state)
    while not state.is_over:
        assert len(texts) < MAX_ACTIONS, f"seed {seed}: no end after {MAX_ACTIONS} actions"
        legal = state.legal_actions()
        assert legal, dump_position(state)
        check_actions_format(legal)
        if rng.random() < DEEP_CHECK_RATE:
            check_round_trip(state)
            check_illegal(state, rng)
            check_sample_world(state, rng.choice((0, 1, SPECTATOR)), rng)
            check_views(state)
        action = choose(rng, legal)
        seat = state.current_player
        event = state.apply(action)
        check_events(seat, event)
        texts.append(format_action(action))
        check_conservation(state)
    assert state.legal_actions() == []
    check_views(state)
    check_round_trip(state)
    replayed = record_of(new_game(ruleset, options, seed), texts).replay()
    assert dump_position(replayed) == dump_position(state)
    return state


def _make_test(config: str) -> object:
    ruleset, options, games = CONFIGS[config]

    @settings(
        max_examples=games,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    @given(seed=st.integers(min_value=0, max_value=2**63 - 1))
    def test(seed: int) -> None:
        state = play_checked_game(ruleset, options, seed)
        assert state.is_over

    test.__doc__ = f"{games} random {config} games keep every invariant."
    return test


test_random_games_standard = _make_test("standard")
test_random_games_basic = _make_test("basic")
test_random_games_deck52 = _make_test("deck52")
test_random_games_standard_start_of_turn = _make_test("standard-start-of-turn")


def test_illegal_actions_are_covered() -> None:
    """The illegal-action check really fires: every kind of candidate gets refused."""
    refused = 0
    for seed in range(5):
        state = new_game("standard", None, seed)
        rng = random.Random(seed)
        for _ in range(40):
            if state.is_over:
                break
            refused += check_illegal(state, rng)
            state.apply(choose(rng, state.legal_actions()))
    assert refused > 500
