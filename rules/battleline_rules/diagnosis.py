"""Why an action is refused: the precise `RuleError` for anything `legal_actions` does
not list. Only the refusal path runs it (`GameState.apply`), so it may take its time and
explain: which step this is, which card is missing, which flag is full.
"""

from __future__ import annotations

from .actions import TACTIC_DECK, TROOP_DECK, Action, Kind, malformation
from .board import UNCLAIMED
from .cards import ENVIRONMENT, Tactic, card_name, is_tactic
from .claims import Grounds
from .errors import ErrorCode, RuleError
from .rulesets import ClaimTiming
from .state import GameState, Phase


def diagnose(state: GameState, action: Action) -> RuleError:
    """The precise reason an action that is not legal now is refused."""
    seat, phase = state.current_player, state.phase
    if phase is Phase.OVER:
        return RuleError(ErrorCode.GAME_OVER, "the game is over")
    n = len(state.flags)
    for flag in (action.flag, action.to_flag):
        if isinstance(flag, int) and flag >= n:
            return RuleError(ErrorCode.NO_SUCH_FLAG, f"there are flags 1 to {n} only")
    problem = malformation(action, n)
    if problem is not None:
        return RuleError(ErrorCode.MALFORMED, problem)
    kind = action.kind
    allowed = {
        Phase.PLAY: {Kind.PLAY, Kind.PASS, Kind.REDEPLOY, Kind.DESERTER, Kind.TRAITOR},
        Phase.SCOUT_DRAW: {Kind.SCOUT_DRAW},
        Phase.SCOUT_RETURN: {Kind.SCOUT_RETURN},
        Phase.MUD_DISCARD: {Kind.MUD_DISCARD},
        Phase.FINISH: {Kind.DRAW, Kind.END},
    }
    if state.claims_allowed():
        allowed[phase].add(Kind.CLAIM)
    if kind not in allowed[phase]:
        if kind is Kind.CLAIM:
            when = (
                "before playing"
                if state.options.claim_timing is ClaimTiming.START_OF_TURN
                else "after playing, before drawing"
            )
            return RuleError(ErrorCode.WRONG_PHASE, f"claims are made {when}")
        words = ", ".join(sorted(k.name.lower().replace("_", "-") for k in allowed[phase]))
        return RuleError(
            ErrorCode.WRONG_PHASE, f"now is the {phase.name.lower()} step: expected {words}"
        )
    if kind is Kind.CLAIM:
        return _claim(state, seat, action.flag)
    if kind in (Kind.DRAW, Kind.SCOUT_DRAW):
        if action.deck not in (TROOP_DECK, TACTIC_DECK) or not state.decks[action.deck]:
            return RuleError(ErrorCode.DECK_EMPTY, "that deck is empty")
        return RuleError(ErrorCode.HAND_FULL, "no draw is due: end the turn")
    if kind is Kind.END:
        return RuleError(ErrorCode.WRONG_PHASE, "a draw is due: draw before ending the turn")
    if kind is Kind.PASS:
        return RuleError(
            ErrorCode.MUST_PLAY_TROOP, "you can place a troop card, so you may not pass"
        )
    if kind is Kind.MUD_DISCARD:
        return RuleError(
            ErrorCode.BAD_TARGET,
            f"discard one of your cards at flag {state.mud_pending[0][1] + 1}",
        )
    if action.card not in state.hands[seat]:
        return RuleError(
            ErrorCode.CARD_NOT_IN_HAND, f"{_name(action.card)} is not in your hand"
        )
    if is_tactic(action.card):
        refusal = state.tactic_refusal(seat, action.card)
        if refusal is not None:
            return refusal
    return _placement(state, seat, action)

def _claim(state: GameState, seat: int, flag: int) -> RuleError:
    verdict = state.claim_verdict(flag, seat)
    code = {
        Grounds.ALREADY_CLAIMED: ErrorCode.FLAG_CLAIMED,
        Grounds.INCOMPLETE: ErrorCode.SIDE_INCOMPLETE,
    }.get(verdict.grounds, ErrorCode.CLAIM_UNPROVEN)
    return RuleError(code, verdict.reason)

def _placement(state: GameState, seat: int, action: Action) -> RuleError:
    kind, card = action.kind, action.card
    if kind is Kind.PLAY:
        return _play(state, seat, action)
    flag = state.flags[action.flag]  # in range: `malformation` checked the shape
    if flag.claimed != UNCLAIMED:
        return RuleError(ErrorCode.FLAG_CLAIMED, f"flag {action.flag + 1} is claimed")
    expected = {
        Kind.REDEPLOY: Tactic.REDEPLOY,
        Kind.DESERTER: Tactic.DESERTER,
        Kind.TRAITOR: Tactic.TRAITOR,
    }[kind]
    if card != expected:
        return RuleError(
            ErrorCode.MALFORMED, f"{kind.name.lower()} is played with {expected.name}"
        )
    owner = seat if kind is Kind.REDEPLOY else 1 - seat
    whose = "your" if owner == seat else "your opponent's"
    if action.target not in state.own_cards(action.flag, owner):
        return RuleError(
            ErrorCode.BAD_TARGET,
            f"{_name(action.target)} is not on {whose} side of flag {action.flag + 1}",
        )
    if kind is Kind.TRAITOR and is_tactic(action.target):
        return RuleError(ErrorCode.BAD_TARGET, "Traitor takes troop cards only, not tactics")
    if action.to_flag == action.flag:
        return RuleError(ErrorCode.BAD_TARGET, "Redeploy moves a card to another flag")
    dest = state.flags[action.to_flag]
    if dest.claimed != UNCLAIMED:
        return RuleError(ErrorCode.FLAG_CLAIMED, f"flag {action.to_flag + 1} is claimed")
    return RuleError(ErrorCode.SLOT_FULL, f"your side of flag {action.to_flag + 1} is full")

def _play(state: GameState, seat: int, action: Action) -> RuleError:
    card, index = action.card, action.flag
    if card in (Tactic.REDEPLOY, Tactic.DESERTER, Tactic.TRAITOR):
        return RuleError(
            ErrorCode.MALFORMED,
            f"{_name(card)} is played as '{_name(card).lower()} CARD@FLAG ...'",
        )
    if card == Tactic.SCOUT:
        if index != -1:
            return RuleError(ErrorCode.MALFORMED, "Scout goes to no flag: play SCOUT")
        return RuleError(
            ErrorCode.DECK_EMPTY, "both decks are empty: Scout has nothing to draw"
        )
    if index == -1:
        return RuleError(
            ErrorCode.MALFORMED, f"say where to play {_name(card)}: play CARD@FLAG"
        )
    flag = state.flags[index]
    if flag.claimed != UNCLAIMED:
        return RuleError(ErrorCode.FLAG_CLAIMED, f"flag {index + 1} is claimed")
    if card in ENVIRONMENT:
        return RuleError(ErrorCode.BAD_TARGET, f"flag {index + 1} already has {_name(card)}")
    return RuleError(ErrorCode.SLOT_FULL, f"your side of flag {index + 1} is full")


def _name(card: int) -> str:
    return card_name(card) if card >= -2 else str(card)
