"""Views are built field by field (not cloned): what each viewer gets, what it may not,
and that a view stays a snapshot although it shares the state's flags until a change."""

from __future__ import annotations

import random

from battleline_rules import SPECTATOR, Kind, dump_position, load_position, new_game


def test_views_hide_the_same_and_only_the_viewer_to_act_sees_legal_actions() -> None:
    rng = random.Random(11)
    for ruleset in ("standard", "basic", "deck52"):
        for seed in range(15):
            state = new_game(ruleset, seed=seed)
            while not state.is_over:
                legal = state.legal_actions()  # computed (and cached) on the full state
                for viewer in (0, 1, SPECTATOR):
                    view = state.view(viewer)
                    text = dump_position(view)
                    assert dump_position(load_position(text)) == text
                    assert view.seed is None and view.viewer == viewer
                    known = state.returned[viewer] if viewer != SPECTATOR else []
                    for seat in (0, 1):  # only cards the viewer put back with Scout show
                        if seat != viewer:
                            assert all(c < 0 or c in known for c in view.hands[seat])
                    assert all(c < 0 for c in view.removed)
                    if viewer == state.current_player:
                        assert view.legal_actions() == legal
                    else:  # never the full state's list of another seat's options
                        assert view.legal_actions() == []
                    assert view.hands[0] is not state.hands[0]
                # A view is a snapshot: playing on the state leaves it as it was (its
                # flags are shared until the state's next change copies them).
                views = [state.view(v) for v in (0, 1, SPECTATOR)]
                texts = [dump_position(v) for v in views]
                state.apply(rng.choice(legal))
                assert [dump_position(v) for v in views] == texts
            over = state.view(0)
            assert over.hands == state.hands and over.decks == state.decks
            assert over.seed == state.seed and over.hands[1] is not state.hands[1]


def test_worlds_sampled_from_a_view_do_not_touch_it() -> None:
    rng = random.Random(3)
    state = new_game("standard", seed=4)
    for _ in range(30):
        state.apply(rng.choice(state.legal_actions()))
    view = state.view(state.current_player)
    text = dump_position(view)
    for _ in range(20):
        world = view.sample_world(rng)
        while not world.is_over:
            world.apply_unchecked(rng.choice(world.legal_actions()))
    assert dump_position(view) == text
    assert dump_position(state.view(state.current_player)) == text


def test_clones_share_flags_until_changed_and_stay_independent() -> None:
    rng = random.Random(8)
    for ruleset in ("standard", "basic", "deck52"):
        for seed in range(10):
            state = new_game(ruleset, seed=seed)
            while not state.is_over:
                copy = state.clone()
                before = dump_position(state)
                # Play the copy out: the original must not move.
                while not copy.is_over:
                    copy.apply(rng.choice(copy.legal_actions()))
                assert dump_position(state) == before
                # And the other way round: a clone taken now keeps this position.
                kept = state.clone()
                state.apply(rng.choice(state.legal_actions()))
                assert dump_position(kept) == before


def test_a_view_tells_nothing_of_the_order_of_a_hidden_hand() -> None:
    """A hand's order is when each card came into it: the seventh audit read from the
    slot a played card left whether it was the card drawn last turn (37% of plays). Any
    order of the other seat's hand gives the viewer the same view: the cards it knows
    (its own Scout returns) first, then the troops' placeholders, then the tactics'."""
    rng = random.Random(17)
    for ruleset in ("standard", "deck52"):
        for seed in range(12):
            state = new_game(ruleset, seed=seed)
            while not state.is_over:
                for viewer in (0, 1, SPECTATOR):
                    text = dump_position(state.view(viewer))
                    for seat in (0, 1):
                        if seat == viewer or len(state.hands[seat]) < 2:
                            continue
                        shuffled = state.clone()
                        shuffled.hands[seat] = rng.sample(state.hands[seat],
                                                          len(state.hands[seat]))
                        assert dump_position(shuffled.view(viewer)) == text
                        hidden = [c for c in state.view(viewer).hands[seat] if c < 0]
                        assert hidden == sorted(hidden, reverse=True)  # ?troop before ?tactic
                state.apply(rng.choice(state.legal_actions()))


def test_the_claims_alone_are_the_claims_of_the_legal_actions() -> None:
    """`claim_actions` (what the engine's automatic claims list, in a time that does not
    depend on the seat's hand) offers exactly the claims `legal_actions` starts with."""
    rng = random.Random(23)
    for ruleset in ("standard", "basic", "deck52"):
        for seed in range(12):
            state = new_game(ruleset, seed=seed)
            while not state.is_over:
                fresh = state.clone()  # nothing listed yet
                claims = fresh.claim_actions()
                assert claims == [a for a in state.legal_actions() if a.kind is Kind.CLAIM]
                other = state.view(1 - state.current_player)
                assert other.claim_actions() == []  # not the viewer's to act
                state.apply(rng.choice(state.legal_actions()))
