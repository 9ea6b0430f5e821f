"""A position's analysis as plain data: what `battleline analyze` shows, reusable by clients.

Everything here is computed by the rules core (`best_formation`, `decide_claim`,
`legal_actions`); this module only gathers it into JSON-ready dicts with
card names, so the terminal client and the JSON output cannot disagree.
The schema is documented in docs/analyze.md; keep keys stable.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from battleline_rules import (
    SPECTATOR,
    UNKNOWN_TACTIC,
    UNKNOWN_TROOP,
    ClaimVerdict,
    Formation,
    GameState,
    Kind,
    Voice,
    best_formation,
    card_name,
    decide_claim,
    describe,
    format_action,
)
from battleline_rules.formations import FOG_CATEGORY

Json = dict[str, Any]

_PLACEHOLDERS = (UNKNOWN_TROOP, UNKNOWN_TACTIC)
# Phases whose legal actions are drawn from the acting player's hand.
def names(cards: list[int] | tuple[int, ...]) -> list[str]:
    """Card names in the rules core's notation (``R7``, ``FOG``, ``?troop``)."""
    return [card_name(c) for c in cards]


def check_consistent(state: GameState) -> None:
    """Refuse a position that shows one card in two places.

    The notation loader accepts such text, and every claim proof drawn from
    it would be silently wrong, so an analysis must not start from it.
    """
    seen: Counter[int] = Counter()
    for flag in state.flags:
        seen.update(flag.cards[0] + flag.cards[1] + [c for c, _ in flag.env])
    for pile in (*state.hands, *state.decks, state.removed, *state.discards):
        seen.update(pile)
    doubled = sorted(c for c, n in seen.items() if n > 1 and c not in _PLACEHOLDERS)
    if doubled:
        raise ValueError(f"card(s) in more than one place: {' '.join(names(doubled))}")


def viewer_label(state: GameState) -> str | int:
    """``"full"``, ``"spectator"`` or the seat whose view this is (as in the notation)."""
    if state.viewer is None:
        return "full"
    return "spectator" if state.viewer == SPECTATOR else state.viewer


def formation_data(state: GameState, formation: Formation | None) -> Json:
    """One formation (complete or reachable); None means it cannot be completed."""
    if formation is None:
        return {
            "category": None,
            "sum": None,
            "strength": None,
            "added": [],
            "description": None,
        }
    fog = formation.category == FOG_CATEGORY
    return {
        "category": "fog" if fog else state.ruleset.category_names[formation.category],
        "sum": formation.total,
        "strength": formation.strength,
        "added": names(formation.added),
        "description": describe(state.ruleset, formation),
    }


def side_formation(state: GameState, index: int, seat: int) -> Json:
    """A side's formation if complete, else the best it can still reach from troops off the
    table."""
    flag = state.flags[index]
    cards = flag.cards[seat]
    missing = flag.size - len(cards)
    if missing < 0:
        # Only between Mud leaving and its owner's discard: no formation yet.
        data = formation_data(state, None)
        return {"complete": False, "cards_needed": 0, "reachable": False, **data}
    if missing == 0:
        formation = best_formation(state.ruleset, cards, 0, 0, flag.fog)
    else:
        formation = best_formation(state.ruleset, cards, missing, state.available, flag.fog)
    return {
        "complete": missing == 0,
        "cards_needed": missing,
        "reachable": formation is not None,
        **formation_data(state, formation),
    }


def seat_voice(seat: int) -> Voice:
    """A verdict's words naming both seats ("seat 0's wedge ... beats seat 1's ..."),
    for a table that shows both seats' claims side by side."""
    other = 1 - seat
    return Voice(f"seat {seat}", f"seat {seat}'s", f"seat {other}", f"seat {other}'s")


def claim_data(state: GameState, index: int, seat: int) -> Json:
    """Whether ``seat`` could claim the flag, why, and whether it may do so right now."""
    verdict: ClaimVerdict = decide_claim(
        state.ruleset, state.flags[index], index, seat, state.available
    )
    takeable = (
        not state.is_over
        and state.current_player == seat
        and any(a.kind is Kind.CLAIM and a.flag == index for a in state.legal_actions())
    )
    return {
        "seat": seat,
        "granted": verdict.granted,
        "takeable_now": takeable,
        "reason": verdict.reason,
        "explanation": verdict.explain(seat_voice(seat)),
        "opponent_best": None if verdict.theirs is None else formation_data(state, verdict.theirs),
        "refutation": names(verdict.refutation),
    }


def flag_data(state: GameState, index: int) -> Json:
    """Everything about one flag: cards, environment, claim status, formations, claims."""
    flag = state.flags[index]
    return {
        "flag": index + 1,
        "size": flag.size,
        "fog": flag.fog,
        "mud": flag.size == 4,
        "sides": [names(flag.cards[0]), names(flag.cards[1])],
        "environment": [{"card": card_name(c), "owner": owner} for c, owner in flag.env],
        "claimed_by": None if flag.claimed < 0 else flag.claimed,
        "formations": [side_formation(state, index, s) for s in (0, 1)],
        "claims": [claim_data(state, index, s) for s in (0, 1)],
    }


def hand_data(state: GameState, seat: int) -> Json:
    """Hand size per deck (public) and the cards where this position shows them."""
    hand = state.hands[seat]
    tactics = sum(1 for c in hand if c == UNKNOWN_TACTIC or c in state.ruleset.tactics)
    hidden = bool(hand) and all(c in _PLACEHOLDERS for c in hand)
    return {
        "seat": seat,
        "troop": len(hand) - tactics,
        "tactic": tactics,
        "cards": None if hidden else names(hand),
    }


def analyze_state(state: GameState) -> Json:
    """The whole analysis of a full state or a seat's view, as JSON-ready data."""
    check_consistent(state)
    options = state.options
    status = "playing" if not state.is_over else ("draw" if state.winner is None else "won")
    return {
        "ruleset": state.ruleset.name,
        "options": {
            "claim_timing": options.claim_timing.value,
            "hand_size": state.hand_size,
            "first_player": options.first_player,
        },
        "viewer": viewer_label(state),
        "status": status,
        "winner": state.winner,
        "player": state.player,
        "player_to_act": None if state.is_over else state.current_player,
        "phase": state.phase.name.lower(),
        "ply": state.ply,
        "decks": {"troop": len(state.decks[0]), "tactic": len(state.decks[1])},
        "removed": len(state.removed),
        "hands": [hand_data(state, s) for s in (0, 1)],
        "discards": [names(state.discards[s]) for s in (0, 1)],
        "claimed_flags": [[i + 1 for i in state.claimed_by(s)] for s in (0, 1)],
        "flags": [flag_data(state, i) for i in range(len(state.flags))],
        "legal_actions": legal_actions(state),
    }


def actions_hidden(state: GameState) -> bool:
    """Whether this is a view of another seat's decision (the rules core lists none)."""
    return state.viewer not in (None, state.current_player) and not state.is_over


def legal_actions(state: GameState) -> list[str] | None:
    """The player to act's legal actions in notation; None when this view cannot know them."""
    if actions_hidden(state):
        return None
    return [format_action(a) for a in state.legal_actions()]
