"""Views are built field by field (not cloned): what each viewer gets, what it may not,
and that a view stays a snapshot although it shares the state's flags until a change."""

from __future__ import annotations

import random

from battleline_rules import SPECTATOR, dump_position, load_position, new_game


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
