"""Deciding a flag claim exactly, with the proof in words.

A claim stands when the claimant's side is complete and no completion of the
opponent's side beats it. Completions draw on every troop card not face up
on the table (``available``); a completion that only ties does not stop the
claim, because the claimant completed first.
"""

from __future__ import annotations

from enum import Enum
from typing import Final, NamedTuple

from .board import UNCLAIMED, Flag
from .cards import card_name, mask_of
from .formations import Formation, best_formation, describe
from .rulesets import Ruleset


class Grounds(Enum):
    """Why a claim is granted or refused; `ClaimVerdict.reason` puts it in words."""

    ALREADY_CLAIMED = "already-claimed"
    INCOMPLETE = "incomplete"
    STRONGER = "stronger"
    TIE_FIRST = "tie-first"
    TIE_SECOND = "tie-second"
    WEAKER = "weaker"
    EMPTY_SIDE = "empty-side"
    CANNOT_COMPLETE = "cannot-complete"
    UNBEATABLE = "unbeatable"
    REFUTED = "refuted"
    DISCARD_PENDING = "discard-pending"


class Voice(NamedTuple):
    """Whom a verdict's words speak of: the claimant and its opponent, each as a
    subject and a possessive (the second person by default; a client names seats)."""

    claimant: str = "you"
    claimants: str = "your"
    opponent: str = "your opponent"
    opponents: str = "their"


SECOND_PERSON: Final = Voice()
# Why a refuting card may be one the claimant holds: players read "can still reach" as
# "from the cards I cannot see" (a player's walkthrough), the rules mean every troop not
# on the table (RULINGS.md, "Claiming a flag").
OFF_THE_TABLE: Final = "a claim is proven from the table alone: cards in hand count as unplayed"


class ClaimVerdict(NamedTuple):
    """Whether ``seat`` may claim a flag now, and why (words built only when asked)."""

    granted: bool
    grounds: Grounds
    ruleset: Ruleset
    flag: int
    seat_cards: int = 0  # how many cards the claimant has there (for INCOMPLETE)
    size: int = 3
    mine: Formation | None = None
    # The opponent's formation, or the best they can still reach (None: cannot complete).
    theirs: Formation | None = None
    # Cards that would complete the opponent's side and beat the claim.
    refutation: tuple[int, ...] = ()

    @property
    def refutation_mask(self) -> int:
        return mask_of(self.refutation)

    @property
    def reason(self) -> str:
        """The verdict in words to the claimant, naming the flag (a refusal's message)."""
        name = f"flag {self.flag + 1}"
        if self.grounds is Grounds.ALREADY_CLAIMED:
            return f"{name} is already claimed"
        if self.grounds is Grounds.INCOMPLETE:
            return f"your side of {name} has {self.seat_cards} of {self.size} cards"
        return f"{name}: {self.explain()}"

    def explain(self, voice: Voice = SECOND_PERSON) -> str:
        """The verdict in words without naming the flag (a proof is shown beside its
        flag), speaking of the claimant and the opponent as ``voice`` says."""
        grounds, rules, v = self.grounds, self.ruleset, voice
        if grounds is Grounds.ALREADY_CLAIMED:
            return "already claimed"
        if grounds is Grounds.INCOMPLETE:
            return f"{v.claimants} side has {self.seat_cards} of {self.size} cards"
        if grounds is Grounds.DISCARD_PENDING:
            return (
                f"Mud has left and a side still holds {self.size + 1} cards: "
                "nothing can be proven there until the discard"
            )
        if grounds is Grounds.EMPTY_SIDE:
            return f"{v.opponents} side has no card"
        if grounds is Grounds.CANNOT_COMPLETE:
            return f"too few troop cards remain off the table for {v.opponent} to complete it"
        assert self.mine is not None
        mine = describe(rules, self.mine)
        theirs = describe(rules, self.theirs) if self.theirs else ""
        if grounds is Grounds.STRONGER:
            return f"{v.claimants} {mine} beats {v.opponents} {theirs}"
        if grounds is Grounds.WEAKER:
            return f"{v.opponents} {theirs} beats {v.claimants} {mine}"
        if grounds is Grounds.TIE_FIRST:
            return f"{mine} on both sides; {v.claimant} completed first"
        if grounds is Grounds.TIE_SECOND:
            return f"{mine} on both sides; {v.opponent} completed first"
        if grounds is Grounds.UNBEATABLE:
            assert self.theirs is not None
            tie = (
                f" (a tie goes to {v.claimant}: {v.claimant} completed first)"
                if self.theirs.strength == self.mine.strength
                else ""
            )
            return (
                f"{v.claimants} {mine}; the best {v.opponent} can still reach with cards off "
                f"the table is {theirs}{tie}"
            )
        cards = " ".join(card_name(c) for c in self.refutation)
        return (
            f"{v.opponent} can still reach {theirs} by adding {cards}, "
            f"which beats {v.claimants} {mine} ({OFF_THE_TABLE})"
        )


def decide_claim(
    ruleset: Ruleset, flag: Flag, index: int, seat: int, available: int
) -> ClaimVerdict:
    """Decide a claim of flag ``index`` (0-based) by ``seat``."""
    if flag.claimed != UNCLAIMED:
        return ClaimVerdict(False, Grounds.ALREADY_CLAIMED, ruleset, index)
    size, fog = flag.size, flag.fog
    mine, theirs = flag.cards[seat], flag.cards[1 - seat]
    if len(mine) > size or len(theirs) > size:
        # Only between Mud leaving and its owner's discard: neither side's formation exists yet.
        return ClaimVerdict(False, Grounds.DISCARD_PENDING, ruleset, index, len(mine), size)
    if len(mine) < size:
        return ClaimVerdict(False, Grounds.INCOMPLETE, ruleset, index, len(mine), size)
    my_form = best_formation(ruleset, mine, 0, 0, fog)
    assert my_form is not None
    if len(theirs) == size:
        their_form = best_formation(ruleset, theirs, 0, 0, fog)
        assert their_form is not None
        if my_form.strength != their_form.strength:
            stronger = my_form.strength > their_form.strength
            grounds = Grounds.STRONGER if stronger else Grounds.WEAKER
        else:
            stronger = flag.completed_at(seat) < flag.completed_at(1 - seat)
            grounds = Grounds.TIE_FIRST if stronger else Grounds.TIE_SECOND
        return ClaimVerdict(stronger, grounds, ruleset, index, size, size, my_form, their_form)
    if not theirs and ruleset.empty_side_loses:
        return ClaimVerdict(True, Grounds.EMPTY_SIDE, ruleset, index, size, size, my_form)
    best = best_formation(ruleset, theirs, size - len(theirs), available, fog)
    if best is None:
        return ClaimVerdict(True, Grounds.CANNOT_COMPLETE, ruleset, index, size, size, my_form)
    if best.strength <= my_form.strength:
        return ClaimVerdict(True, Grounds.UNBEATABLE, ruleset, index, size, size, my_form, best)
    return ClaimVerdict(
        False, Grounds.REFUTED, ruleset, index, size, size, my_form, best, best.added
    )
