"""Deciding a flag claim exactly, with the proof in words.

A claim stands when the claimant's side is complete and no completion of the
opponent's side beats it. Completions draw on every troop card not face up
on the table (``available``); a completion that only ties does not stop the
claim, because the claimant completed first.
"""

from __future__ import annotations

from typing import NamedTuple

from .board import UNCLAIMED, Flag
from .cards import card_name, mask_of
from .formations import Formation, best_formation, describe
from .rulesets import Ruleset


class ClaimVerdict(NamedTuple):
    """Whether ``seat`` may claim a flag now, and why."""

    granted: bool
    reason: str
    # The opponent's formation, or the best they can still reach (None: cannot complete).
    theirs: Formation | None = None
    # Cards that would complete the opponent's side and beat the claim.
    refutation: tuple[int, ...] = ()

    @property
    def refutation_mask(self) -> int:
        return mask_of(self.refutation)


def decide_claim(
    ruleset: Ruleset, flag: Flag, index: int, seat: int, available: int
) -> ClaimVerdict:
    """Decide a claim of flag ``index`` (0-based) by ``seat``."""
    name = f"flag {index + 1}"
    if flag.claimed != UNCLAIMED:
        return ClaimVerdict(False, f"{name} is already claimed")
    size, fog = flag.size, flag.fog
    mine, theirs = flag.cards[seat], flag.cards[1 - seat]
    if len(mine) < size:
        return ClaimVerdict(False, f"your side of {name} has {len(mine)} of {size} cards")
    my_form = best_formation(ruleset, mine, 0, 0, fog)
    assert my_form is not None
    mine_words = describe(ruleset, my_form)
    if len(theirs) == size:
        their_form = best_formation(ruleset, theirs, 0, 0, fog)
        assert their_form is not None
        their_words = describe(ruleset, their_form)
        if my_form.strength > their_form.strength:
            return ClaimVerdict(
                True, f"{name}: your {mine_words} beats their {their_words}", their_form
            )
        if my_form.strength == their_form.strength:
            if flag.completed_at(seat) < flag.completed_at(1 - seat):
                return ClaimVerdict(
                    True, f"{name}: {mine_words} on both sides; you completed first", their_form
                )
            return ClaimVerdict(
                False,
                f"{name}: {mine_words} on both sides; your opponent completed first",
                their_form,
            )
        return ClaimVerdict(
            False, f"{name}: their {their_words} beats your {mine_words}", their_form
        )
    if not theirs and ruleset.empty_side_loses:
        return ClaimVerdict(True, f"{name}: your opponent has no card there")
    missing = size - len(theirs)
    best = best_formation(ruleset, theirs, missing, available, fog)
    if best is None:
        return ClaimVerdict(
            True, f"{name}: too few troop cards remain unseen for your opponent to complete it"
        )
    best_words = describe(ruleset, best)
    if best.strength <= my_form.strength:
        tie = (
            " (a tie goes to you: you completed first)" if best.strength == my_form.strength else ""
        )
        return ClaimVerdict(
            True,
            f"{name}: your {mine_words}; the best your opponent can still reach is "
            f"{best_words}{tie}",
            best,
        )
    cards = " ".join(card_name(c) for c in best.added)
    return ClaimVerdict(
        False,
        f"{name}: your opponent can still reach {best_words} by adding {cards}, "
        f"which beats your {mine_words}",
        best,
        best.added,
    )
