"""Flag claims and their proofs (RULINGS.md, "Claiming a flag")."""

from __future__ import annotations

import pytest

from battleline_rules import (
    Action,
    ErrorCode,
    Grounds,
    Kind,
    Outcome,
    RuleError,
    Termination,
    Voice,
    decide_claim,
    dump_position,
    load_position,
    parse_action,
)

from .positions import position


def granted(state, flag: int, seat: int = 0) -> bool:  # type: ignore[no-untyped-def]
    return state.claim_verdict(flag - 1, seat).granted


def test_both_complete_stronger_formation_claims() -> None:
    state = position(flags={1: "R4 R5 R6 | B6 G6 Y6"})
    assert granted(state, 1, 0)
    assert not granted(state, 1, 1)


def test_both_complete_tie_goes_to_who_completed_first() -> None:
    # Seat 1's third card (#5) came before seat 0's (#6).
    state = position(flags={1: "R2#1 R5#3 R9#6 | B2#2 B5#4 B9#5"})
    assert not granted(state, 1, 0)
    assert granted(state, 1, 1)
    assert "completed first" in state.claim_verdict(0, 0).reason


def test_incomplete_opponent_claim_needs_proof() -> None:
    # Opponent holds B8 B9: B10 is unseen, so a blue 8-9-10 wedge (27) beats R7-8-9 (24).
    state = position(flags={1: "R7 R8 R9 | B8 B9"})
    verdict = state.claim_verdict(0, 0)
    assert not verdict.granted
    assert "B10" in verdict.reason


def test_proof_uses_cards_face_up_elsewhere() -> None:
    state = position(flags={1: "R7 R8 R9 | B8 B9", 2: "B10 | B7"})
    # B10 and B7 are on the table: blue 7-8-9 or 8-9-10 cannot be made any more,
    # and the best left is a phalanx or lower.
    assert granted(state, 1, 0)


def test_claimants_own_hand_is_no_proof() -> None:
    state = position(flags={1: "R7 R8 R9 | B8 B9", 2: "B7 |"}, hands=("B10", ""))
    assert not granted(state, 1, 0)


def test_a_completion_that_only_ties_does_not_stop_the_claim() -> None:
    # Seat 1 can at best reach a 7-8-9 wedge in blue (24) = seat 0's red 7-8-9.
    state = position(flags={1: "R7 R8 R9 | B8", 2: "B10 |"})
    verdict = state.claim_verdict(0, 0)
    assert verdict.granted, verdict.reason
    assert "tie" in verdict.reason


def test_morale_tactics_on_the_opponents_side_count_at_best() -> None:
    # Leader on seat 1's side: with B9 B10 it makes a 27 wedge, above R7-8-9.
    state = position(flags={1: "R7 R8 R9 | ALEXANDER"})
    assert not granted(state, 1, 0)
    # Against R8-9-10 (27) the best the Leader can reach only ties.
    tied = position(flags={1: "R8 R9 R10 | ALEXANDER"})
    assert granted(tied, 1, 0)


def test_unplayed_tactics_are_ignored() -> None:
    state = position(flags={1: "R8 R9 R10 | B2"}, hands=("", "FOG MUD ALEXANDER"))
    assert granted(state, 1, 0)


def test_mud_and_fog_change_what_must_be_proven() -> None:
    mud = position(flags={1: "R7 R8 R9 | B2 | MUD/1 | -"})
    assert not state_has_claim(mud)
    assert "3 of 4" in mud.claim_verdict(0, 0).reason
    fog = position(flags={1: "R10 B10 G10 | B2 | FOG/1 | -"})
    # Under Fog only the sum counts: 30 cannot be beaten by 2 + two cards (max 2+10+10).
    assert granted(fog, 1, 0)
    fog_low = position(flags={1: "R1 R2 R3 | B9 | FOG/1 | -"})
    assert not granted(fog_low, 1, 0)


def state_has_claim(state) -> bool:  # type: ignore[no-untyped-def]
    return any(a.kind is Kind.CLAIM for a in state.legal_actions())


def test_standard_empty_side_still_needs_proof() -> None:
    assert not granted(position(flags={1: "R2 B5 G9 | -"}), 1, 0)
    assert granted(position(flags={1: "R8 R9 R10 | -"}), 1, 0)


def test_deck52_complete_side_wins_against_an_empty_side() -> None:
    state = position("deck52", flags={1: "S2 H5 D9 | -"})
    verdict = state.claim_verdict(0, 0)
    assert verdict.granted and "no card" in verdict.reason


def test_claim_after_play_in_finish_step_only() -> None:
    state = position(flags={1: "R8 R9 R10 | B2"}, hands=("G5", ""))
    assert not state_has_claim(state)  # after-play timing: not before playing
    with pytest.raises(RuleError) as error:
        state.apply(Action(Kind.CLAIM, flag=0))
    assert error.value.code is ErrorCode.WRONG_PHASE
    state.apply(Action(Kind.PLAY, card=state.hands[0][0], flag=1))
    assert state_has_claim(state)
    state.apply(Action(Kind.CLAIM, flag=0))
    assert state.flags[0].claimed == 0


def test_start_of_turn_timing_claims_before_playing() -> None:
    options = "claim=start-of-turn first=0"
    state = position(flags={1: "R8 R9 R10 | B2"}, hands=("G5", ""), options=options)
    assert state_has_claim(state)
    state.apply(Action(Kind.PLAY, card=state.hands[0][0], flag=1))
    assert not state_has_claim(state)


def test_deck52_claims_any_time_in_the_turn() -> None:
    state = position("deck52", flags={1: "S2 H5 D9 | -"}, hands=("C4 C5", ""))
    assert state_has_claim(state)
    state.apply(Action(Kind.PLAY, card=state.hands[0][0], flag=2))
    assert state_has_claim(state)


def test_deck52_with_the_start_of_turn_option_claims_only_before_playing() -> None:
    """RULINGS: the claim timing is an option on any ruleset; deck52's "any time in one's
    turn" is its default (an independent rules audit found the option ignored there)."""
    options = "claim=start-of-turn first=0"
    state = position("deck52", flags={1: "S2 H5 D9 | -"}, hands=("C4 C5", ""),
                     options=options)
    assert state_has_claim(state)
    state.apply(Action(Kind.PLAY, card=state.hands[0][0], flag=2))
    assert not state_has_claim(state)
    with pytest.raises(RuleError):
        state.apply(Action(Kind.CLAIM, flag=0))


def test_refused_claim_changes_nothing() -> None:
    state = position(flags={1: "R7 R8 R9 | B8 B9"}, hands=("G5", ""))
    state.apply(Action(Kind.PLAY, card=state.hands[0][0], flag=1))
    before = dump_position(state)
    with pytest.raises(RuleError) as error:
        state.apply(Action(Kind.CLAIM, flag=0))
    assert error.value.code is ErrorCode.CLAIM_UNPROVEN
    assert dump_position(state) == before


def test_claimed_flag_is_locked() -> None:
    state = position(flags={1: "R8 R9 R10 | B2 | - | 0"}, hands=("G5 DESERTER FOG", ""))
    plays = state.legal_actions()
    assert all(a.flag != 0 for a in plays)
    with pytest.raises(RuleError) as error:
        state.apply(Action(Kind.PLAY, card=state.hands[0][0], flag=0))
    assert error.value.code is ErrorCode.FLAG_CLAIMED


def test_breakthrough_and_envelopment_end_the_game() -> None:
    three = position(flags={1: "R1 R2 R3 | - | - | 0", 2: "B1 B2 B3 | - | - | 0",
                            3: "G8 G9 G10 | Y2"}, hands=("P5", ""), phase="finish")
    assert three.outcome() is None
    three.apply(Action(Kind.CLAIM, flag=2))
    assert three.is_over and three.outcome() == Outcome(Termination.BREAKTHROUGH, 0)
    spread = {i: f"{c}1 {c}2 {c}3 | - | - | 0" for i, c in zip((1, 3, 5, 7), "RBGY", strict=True)}
    spread[9] = "P8 P9 P10 | O2"
    five = position(flags=spread, hands=("O5", ""), phase="finish")
    five.apply(Action(Kind.CLAIM, flag=8))
    assert five.is_over and five.outcome() == Outcome(Termination.ENVELOPMENT, 0)
    # The outcome follows from the position: it survives the notation.
    assert load_position(dump_position(five)).outcome() == five.outcome()


def test_deck52_wins_with_four_or_the_two_end_flags() -> None:
    # Two flags at one end win in deck52 (8 flags), though they are only two.
    ends = position("deck52", flags={8: "- | SJ SQ SK | - | 1", 7: "- | H2 H3 H4"},
                    hands=("", "C5"), player=1, phase="finish")
    ends.apply(Action(Kind.CLAIM, flag=6))
    assert ends.is_over and ends.outcome() == Outcome(Termination.FLANKS, 1)
    # Two adjacent flags in the middle do not.
    middle = position("deck52", flags={4: "- | SJ SQ SK | - | 1", 5: "- | H2 H3 H4"},
                      hands=("", "C5"), player=1, phase="finish")
    middle.apply(Action(Kind.CLAIM, flag=4))
    assert not middle.is_over
    four = {i: f"- | {s}2 {s}3 {s}4 | - | 1" for i, s in zip((1, 3, 5), "SHD", strict=True)}
    four[7] = "- | C8 C9 C10"
    spread = position("deck52", flags=four, hands=("", "C5"), player=1, phase="finish")
    spread.apply(Action(Kind.CLAIM, flag=6))
    assert spread.is_over and spread.outcome() == Outcome(Termination.ENVELOPMENT, 1)


def test_refused_claims_name_their_reason() -> None:
    state = position(flags={1: "R8 R9 R10 | B2 | - | 0", 2: "R1 | B3"}, hands=("G5", ""),
                     phase="finish")
    for text, code in (("claim 1", ErrorCode.FLAG_CLAIMED), ("claim 2", ErrorCode.SIDE_INCOMPLETE)):
        with pytest.raises(RuleError) as error:
            state.apply(parse_action(text))
        assert error.value.code is code


def test_a_cached_granted_claim_explains_itself_as_a_fresh_decision_would() -> None:
    # Issue #15: a granted verdict was cached with its explanation, which named
    # G10 as a card the opponent could still add after G10 had been played.
    state = position("basic", flags={1: "G8#1 G9#3 | P8#2 P9#4 P10#5 | - | -"},
                     hands=("G10", "O1"), player=1, phase="finish")
    assert "wedge, sum 27" in state.claim_verdict(0, 1).reason
    for text in ("draw troop", "play G10@2", "draw troop", "play O1@3"):
        state.apply(parse_action(text))
    cached = state.claim_verdict(0, 1)
    fresh = decide_claim(state.ruleset, state.flags[0], 0, 1, state.available)
    assert cached.granted and cached == fresh
    assert "wedge, sum 24" in cached.reason and "G10" not in cached.reason


def test_no_claim_is_proven_while_mud_leaves_a_side_too_full() -> None:
    # Issue #15: seat 0's four-card wedge stood on what is again a three-card flag.
    state = position(flags={1: "R1 R2 R3 R4 | B5 G5 Y5 | MUD/0 | -"},
                     hands=("", "DESERTER P2"), player=1)
    state.apply(parse_action("deserter MUD@1"))
    assert state.phase.name == "MUD_DISCARD"
    for seat in (0, 1):
        for verdict in (
            state.claim_verdict(0, seat),
            decide_claim(state.ruleset, state.flags[0], 0, seat, state.available),
        ):
            assert not verdict.granted, verdict.reason
            assert verdict.grounds is Grounds.DISCARD_PENDING
            assert "until the discard" in verdict.reason, verdict.reason
    state.apply(parse_action("mud-discard R4@1"))
    # R1 R2 R3 (wedge) beats B5 G5 Y5 (phalanx) once the flag is back to three.
    assert state.claim_verdict(0, 0).granted and not state.claim_verdict(0, 1).granted


def test_a_verdict_explains_itself_beside_its_flag_and_of_either_seat() -> None:
    state = position(flags={1: "R8 R9 R10 | B2 B3"}, hands=("G5", ""))
    verdict = state.claim_verdict(0, 0)
    assert verdict.reason == f"flag 1: {verdict.explain()}"
    assert verdict.explain().startswith("your wedge, sum 27; the best your opponent can")
    seats = Voice("seat 0", "seat 0's", "seat 1", "seat 1's")
    assert verdict.explain(seats).startswith("seat 0's wedge, sum 27; the best seat 1 can")
    refused = state.claim_verdict(0, 1)
    assert refused.explain(Voice("you", "your", "AI level 2", "AI level 2's")) == (
        "your side has 2 of 3 cards")
