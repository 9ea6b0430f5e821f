"""Turn structure, draws, passing, tactics (RULINGS.md, "Turn" and "Tactics")."""

from __future__ import annotations

import random

import pytest

from battleline_rules import (
    RULESETS,
    SPECTATOR,
    Action,
    ErrorCode,
    Kind,
    Options,
    Outcome,
    RuleError,
    Termination,
    dump_position,
    format_action,
    load_position,
    new_game,
    parse_action,
    parse_card,
)
from battleline_rules.rulesets import validate_options

from .positions import position


def act(state, text: str) -> None:  # type: ignore[no-untyped-def]
    state.apply(parse_action(text))


def kinds(state) -> set[str]:  # type: ignore[no-untyped-def]
    return {a.kind.name for a in state.legal_actions()}


def rejected(state, text: str) -> ErrorCode:  # type: ignore[no-untyped-def]
    before = dump_position(state)
    with pytest.raises(RuleError) as error:
        act(state, text)
    assert dump_position(state) == before, "a rejected action changed the state"
    return error.value.code


@pytest.mark.parametrize(
    ("ruleset", "options", "hand", "flags", "removed"),
    [("standard", Options(), 7, 9, 0), ("basic", Options(), 6, 9, 0),
     ("basic", Options(hand_size=7), 7, 9, 0), ("deck52", Options(), 6, 8, 2)],
)
def test_setup(ruleset: str, options: Options, hand: int, flags: int, removed: int) -> None:
    state = new_game(ruleset, options, seed=7)
    assert [len(h) for h in state.hands] == [hand, hand]
    assert len(state.flags) == flags and len(state.removed) == removed
    assert state.current_player == 0
    assert dump_position(new_game(ruleset, options, seed=7)) == dump_position(state)
    assert dump_position(new_game(ruleset, options, seed=8)) != dump_position(state)


def test_a_turn_is_play_claim_draw() -> None:
    state = position(hands=("R5 B7", "G2"))
    act(state, "play R5@1")
    assert kinds(state) == {"DRAW"}
    assert rejected(state, "play B7@2") is ErrorCode.WRONG_PHASE
    act(state, "draw tactic")
    assert state.current_player == 1 and len(state.hands[0]) == 2


def test_empty_deck_draws_from_the_other_and_both_empty_ends() -> None:
    state = position(hands=("R5 B7", "G2"), troop_deck="", tactic_deck="FOG")
    act(state, "play R5@1")
    assert [format_action(a) for a in state.legal_actions()] == ["draw tactic"]
    empty = position(hands=("R5 B7", "G2"), troop_deck="", tactic_deck="")
    act(empty, "play R5@1")
    assert [format_action(a) for a in empty.legal_actions()] == ["end"]
    assert rejected(empty, "draw troop") is ErrorCode.DECK_EMPTY


def test_pass_only_when_no_troop_can_be_placed() -> None:
    state = position(hands=("R5 FOG", "G2"))
    assert "PASS" not in kinds(state)
    assert rejected(state, "pass") is ErrorCode.MUST_PLAY_TROOP
    only_tactics = position(hands=("FOG", "G2"))
    assert "PASS" in kinds(only_tactics)
    full = {i: f"{c}1 {c}2 {c}3 | -" for i, c in zip(range(1, 7), "ROYGBP", strict=True)}
    full.update({i: f"{c}4 {c}5 {c}6 | -" for i, c in zip(range(7, 10), "ROY", strict=True)})
    no_slot = position(flags=full, hands=("B10", "G9"))
    assert kinds(no_slot) == {"PASS"}


def test_tactics_parity() -> None:
    state = position(hands=("FOG MUD R5", "G2"), discards=("", ""))
    assert any(a.card == parse_card("FOG") for a in state.legal_actions())
    act(state, "play FOG@1")
    act(state, "draw troop")
    act(state, "play G2@2")
    act(state, "draw troop")
    # Seat 0 has played 1 tactic and seat 1 none: no second one yet.
    assert not any(a.card == parse_card("MUD") for a in state.legal_actions())
    code = rejected(state, "play MUD@3")
    assert code is ErrorCode.TACTICS_PARITY


def test_one_leader_per_player() -> None:
    state = position(hands=("ALEXANDER DARIUS R5", "G2 FOG"))
    act(state, "play ALEXANDER@1")
    act(state, "draw troop")
    act(state, "play FOG@2")  # seat 1 plays a tactic too, so parity allows seat 0 another
    act(state, "draw troop")
    assert not any(a.card == parse_card("DARIUS") for a in state.legal_actions())
    assert rejected(state, "play DARIUS@2") is ErrorCode.LEADER_USED


def test_morale_tactics_take_a_slot() -> None:
    state = position(flags={1: "R1 R2 | -"}, hands=("CAVALRY", "G2"))
    act(state, "play CAVALRY@1")
    assert len(state.flags[0].cards[0]) == 3


def test_mud_makes_four_and_fog_takes_no_slot() -> None:
    state = position(flags={1: "R1 R2 R3 | B4"}, hands=("MUD R9", "G2"))
    act(state, "play MUD@1")
    assert state.flags[0].size == 4 and len(state.flags[0].cards[0]) == 3
    assert not state.claim_verdict(0, 0).granted


def test_mud_leaving_a_four_card_side_makes_its_owner_discard() -> None:
    state = position(flags={1: "R1 R2 R3 R4 | B4 B5 B6 B7 | MUD/1 | -"},
                     hands=("DESERTER R9", "G2"))
    act(state, "deserter MUD@1")
    # Seat 0 acted, so seat 0 discards first, then seat 1.
    assert state.current_player == 0
    assert kinds(state) == {"MUD_DISCARD"}
    act(state, "mud-discard R1@1")
    assert state.current_player == 1
    act(state, "mud-discard B7@1")
    assert state.current_player == 0 and kinds(state) == {"DRAW"}
    assert state.flags[0].size == 3
    assert parse_card("MUD") in state.discards[1] and parse_card("B7") in state.discards[1]
    assert parse_card("R1") in state.discards[0]


def test_scout_draws_three_returns_two_and_no_draw() -> None:
    state = position(hands=("SCOUT R5", "G2"), troop_deck="R1 R2 R3", tactic_deck="FOG MUD")
    act(state, "play SCOUT")
    act(state, "scout-draw troop")
    act(state, "scout-draw tactic")
    act(state, "scout-draw troop")
    assert len(state.hands[0]) == 4
    act(state, "scout-return R5")
    act(state, "scout-return MUD")
    assert kinds(state) == {"END"}
    assert state.decks[0][-1] == parse_card("R5") and state.decks[1][-1] == parse_card("MUD")
    # The opponent sees which decks got cards back, not the cards.
    opponent = state.view(1)
    assert opponent.decks[0][-1] < 0 and opponent.decks[1][-1] < 0
    mine = state.view(0)
    assert mine.decks[0][-1] == parse_card("R5") and mine.decks[1][-1] == parse_card("MUD")


def test_redeploy_moves_or_discards_own_cards() -> None:
    state = position(flags={1: "R1 | B2", 2: "R7 | -"}, hands=("REDEPLOY R9", "G3"))
    act(state, "redeploy R1@1 2")
    assert state.flags[1].cards[0] == [parse_card("R7"), parse_card("R1")]
    other = position(flags={1: "R1 | B2"}, hands=("REDEPLOY R9", "G3"))
    assert rejected(other, "redeploy B2@1 2") is ErrorCode.BAD_TARGET
    act(other, "redeploy R1@1 discard")
    assert parse_card("R1") in other.discards[0] and parse_card("REDEPLOY") in other.discards[0]


def test_deserter_and_traitor() -> None:
    state = position(flags={1: "R1 | B2 CAVALRY"}, hands=("TRAITOR DESERTER", "G3"))
    assert rejected(state, "traitor CAVALRY@1 2") is ErrorCode.BAD_TARGET
    act(state, "traitor B2@1 3")
    assert state.flags[2].cards[0] == [parse_card("B2")]
    deserter = position(flags={1: "R1 | B2 CAVALRY"}, hands=("DESERTER", "G3"))
    act(deserter, "deserter CAVALRY@1")
    assert parse_card("CAVALRY") in deserter.discards[1]


def test_actions_by_the_wrong_seat_or_after_the_end() -> None:
    state = position(hands=("R5", "G2"))
    assert rejected(state, "play G2@1") is ErrorCode.CARD_NOT_IN_HAND
    assert rejected(state, "play R5@10") is ErrorCode.NO_SUCH_FLAG
    state.resign(0)
    assert state.is_over and state.outcome() == Outcome(Termination.RESIGNATION, 1)
    assert load_position(dump_position(state)).outcome() == state.outcome()
    assert rejected(state, "play R5@1") is ErrorCode.GAME_OVER


def test_views_hide_hands_decks_seed_and_removed_cards() -> None:
    state = new_game("deck52", seed=3)
    for viewer in (0, 1, SPECTATOR):
        view = state.view(viewer)
        text = dump_position(view)
        assert view.seed is None and "seed: -" in text
        for seat in (0, 1):
            if seat != viewer:
                assert all(c < 0 for c in view.hands[seat])
        assert all(c < 0 for c in view.decks[0] + view.removed)
    assert state.view(0).hands[0] == state.hands[0]


def test_sampled_worlds_agree_with_the_view() -> None:
    state = new_game("standard", seed=5)
    rng = random.Random(1)
    view = state.view(1)
    world = view.sample_world(rng)
    assert world.hands[1] == state.hands[1]
    assert [len(d) for d in world.decks] == [len(d) for d in state.decks]
    assert sorted(world.hands[0] + world.decks[0]) == sorted(state.hands[0] + state.decks[0])


def test_stalemate_ends_the_game() -> None:
    state = position(flags={1: "R8 R9 R10 | B1 B2"}, hands=("FOG", "MUD"),
                     troop_deck="", tactic_deck="")
    act(state, "play FOG@2")
    act(state, "end")
    act(state, "play MUD@3")
    act(state, "end")
    # Neither can play or draw now: two idle turns end the game, and flag 1,
    # which seat 0 could prove but did not claim, is awarded to it.
    act(state, "pass")
    act(state, "end")
    assert not state.is_over
    act(state, "pass")
    act(state, "end")
    assert state.is_over and state.flags[0].claimed == 0
    assert state.outcome() == Outcome(Termination.STALEMATE, 0)
    assert load_position(dump_position(state)).outcome() == state.outcome()


def test_a_stalemate_with_as_many_flags_each_is_a_draw() -> None:
    state = position(hands=("FOG", "MUD"), troop_deck="", tactic_deck="")
    for text in ("play FOG@2", "end", "play MUD@3", "end", "pass", "end"):
        act(state, text)
    assert state.outcome() is None
    act(state, "pass")
    act(state, "end")
    assert state.outcome() == Outcome(Termination.STALEMATE, None)


def test_only_basic_changes_the_hand_size() -> None:
    validate_options(RULESETS["basic"], Options(hand_size=7))
    for ruleset, size in (("basic", 8), ("standard", 7), ("deck52", 7)):
        with pytest.raises(ValueError) as error:
            validate_options(RULESETS[ruleset], Options(hand_size=size))
        assert str(error.value) == "hand size can only be changed in basic, to 6 or 7"


def test_a_position_prints_and_compares_as_its_text() -> None:
    state = new_game("standard", seed=8)
    assert repr(state) == f'load_position("""\n{dump_position(state)}""")'
    assert state == state.clone() == load_position(dump_position(state))
    assert state != state.view(0) and state != new_game("standard", seed=9)
    state.apply(state.legal_actions()[0])
    assert state != new_game("standard", seed=8)


class _Pick(random.Random):
    """A generator whose next `randrange` answer is chosen by the test."""

    def __init__(self, index: int) -> None:
        super().__init__(0)
        self.index = index

    def randrange(self, stop: int, *args: object, **kwargs: object) -> int:  # type: ignore[override]
        assert 0 <= self.index < stop
        return self.index


def test_random_action_covers_exactly_the_legal_actions() -> None:
    rng = random.Random(4)
    checked = 0
    for seed in range(30):
        state = new_game("standard", seed=seed)
        while not state.is_over:
            if state.phase.name == "PLAY":
                fresh = state.clone()
                legal = fresh.legal_actions()
                picked = [state.clone().random_action(_Pick(i)) for i in range(len(legal))]
                assert sorted(picked) == sorted(legal)
                checked += 1
            state.apply_unchecked(rng.choice(state.legal_actions()))
    assert checked > 500


@pytest.mark.parametrize(
    "action",
    [
        Action(Kind.PLAY, card=120, flag=2),
        Action(Kind.SCOUT_RETURN, card=48, flag=0),
        Action(Kind.CLAIM),
        Action(Kind.TRAITOR, card=69, flag=0, target=3, to_flag=-1),
        Action(Kind.DRAW, deck=5),
        Action(Kind.PASS, card=3),
    ],
)
def test_actions_built_field_by_field_are_refused_precisely(action: Action) -> None:
    state = new_game("standard", seed=1)
    before = dump_position(state)
    with pytest.raises(RuleError) as error:
        state.apply(action)
    assert error.value.code is ErrorCode.MALFORMED
    assert dump_position(state) == before
