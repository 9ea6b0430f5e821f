"""A rule-based player: the yardstick every search level must beat.

It claims every flag it can, then scores each legal action by how much it
moves the win chance (`evaluation.flag_chance`) of the flags it touches,
weighted by how much each flag matters (neighbours held, flags that would
decide the game). Troops and morale tactics are scored the same way (the
rules core's `best_formation` values Leader, Cavalry and Shield at their
best), so it builds toward the best reachable formation, dumps a useless
card where it costs least, and spends a tactic only when the gain beats a
fixed price (a tactic played lets the opponent play one).
"""

from __future__ import annotations

import random
from collections.abc import Iterable

from battleline_rules import DISCARD, TACTIC_DECK, TROOP_DECK, Action, GameState, Kind, Phase
from battleline_rules.board import UNCLAIMED
from battleline_rules.cards import ENVIRONMENT, LEADERS, Tactic, is_tactic

from .evaluation import flag_chance, flag_weights, hand_masks

TACTIC_COST = 0.12
LEADER_COST = 0.2
OPEN_COST = 0.03  # starting a new flag commits a card early
SCOUT_SCORE = -0.05  # worth it only when every play hurts


class Board:
    """One decision's context: the seat, its weights and cached chances per flag.

    ``charge`` is the share of a troop's best use at another flag that playing it here
    costs (`elsewhere`); 0 scores each flag on its own.
    """

    def __init__(self, view: GameState, seat: int, charge: float = 0.0) -> None:
        self.view = view
        self.seat = seat
        self.charge = charge
        self.hands = hand_masks(view)
        self.weights = flag_weights(view, seat)
        self._now: dict[int, float] = {}
        self._losses: dict[int, list[float]] = {}

    def chance(
        self,
        index: int,
        add: Iterable[int] = (),
        remove: Iterable[int] = (),
        take: Iterable[int] = (),
        env: list[tuple[int, int]] | None = None,
        placed: int = 0,
    ) -> float:
        """Chance at a flag after adding/removing own cards, taking opponent cards, new env."""
        flag = self.view.flags[index]
        seat = self.seat
        if flag.claimed != UNCLAIMED:
            return float(flag.claimed == seat)
        removed, taken = set(remove), set(take)
        mine = [c for c in flag.cards[seat] if c not in removed] + list(add)
        theirs = [c for c in flag.cards[1 - seat] if c not in taken]
        env = flag.env if env is None else env
        size = 4 if any(c == Tactic.MUD for c, _ in env) else 3
        fog = any(c == Tactic.FOG for c, _ in env)
        return self.estimate(mine, theirs, size, fog, placed)

    def estimate(
        self, mine: list[int], theirs: list[int], size: int, fog: bool, placed: int
    ) -> float:
        """The seat's chance at a flag with these sides: what another board may estimate
        otherwise (`prob`'s board counts exact odds)."""
        return flag_chance(self.view, self.seat, mine, theirs, size, fog, self.hands, placed)

    def now(self, index: int) -> float:
        if index not in self._now:
            self._now[index] = self.chance(index)
        return self._now[index]

    def gain(self, index: int, after: float) -> float:
        return self.weights[index] * (after - self.now(index))

    def elsewhere(self, card: int, index: int) -> float:
        """The most any other open flag loses once ``card`` leaves the hand: what playing
        the card at flag ``index`` gives up."""
        if card not in self._losses:
            self._losses[card] = [
                -self.gain(j, self.chance(j, placed=_bit(card)))
                if flag.is_open(self.seat) else 0.0
                for j, flag in enumerate(self.view.flags)
            ]
        return max((loss for j, loss in enumerate(self._losses[card]) if j != index),
                   default=0.0)


def _bit(card: int) -> int:
    return 1 << card if card >= 0 else 0


def score_action(board: Board, action: Action) -> float:
    """How much an action in the PLAY step improves ``board.seat``'s flags, minus its price."""
    kind, card, i = action.kind, action.card, action.flag
    flags = board.view.flags
    if kind is Kind.PASS:
        return 0.0
    price = LEADER_COST if card in LEADERS else TACTIC_COST if is_tactic(card) else 0.0
    if kind is Kind.PLAY:
        if card == Tactic.SCOUT:
            return SCOUT_SCORE
        if card in ENVIRONMENT:
            env = [*flags[i].env, (card, board.seat)]
            return board.gain(i, board.chance(i, env=env)) - price
        opening = OPEN_COST if not flags[i].cards[board.seat] else 0.0
        if board.charge and not is_tactic(card):
            price += board.charge * board.elsewhere(card, i)
        return board.gain(i, board.chance(i, add=[card], placed=_bit(card))) - price - opening
    target, j = action.target, action.to_flag
    if kind is Kind.DESERTER:
        if target in ENVIRONMENT:
            env = [e for e in flags[i].env if e[0] != target]
            return board.gain(i, board.chance(i, env=env)) - price
        return board.gain(i, board.chance(i, take=[target], placed=_bit(target))) - price
    if kind is Kind.TRAITOR:
        if i == j:
            return board.gain(i, board.chance(i, add=[target], take=[target])) - price
        out = board.gain(i, board.chance(i, take=[target], placed=_bit(target)))
        return out + board.gain(j, board.chance(j, add=[target])) - price
    # Redeploy of one's own card (or Fog/Mud).
    if target in ENVIRONMENT:
        env = [e for e in flags[i].env if e[0] != target]
        score = board.gain(i, board.chance(i, env=env))
        if j != DISCARD:
            score += board.gain(j, board.chance(j, env=[*flags[j].env, (target, board.seat)]))
        return score - price
    score = board.gain(i, board.chance(i, remove=[target], placed=_bit(target)))
    if j != DISCARD:
        score += board.gain(j, board.chance(j, add=[target]))
    return score - price


class HeuristicBot:
    """Greedy on `score_action`; ``noise`` > 0 plays that share of its card plays at random
    (levels 1 and 2; its draws and other small decisions stay the heuristic's, so a noisy
    bot never fills its hand with tactics it may not play); ``charge`` prices a troop at
    its best use elsewhere (`Board`)."""

    name = "heuristic"
    board_type: type[Board] = Board

    def __init__(self, noise: float = 0.0, charge: float = 0.0) -> None:
        self.noise = noise
        self.charge = charge

    @classmethod
    def from_knobs(cls, knobs: dict[str, str]) -> HeuristicBot:
        unknown = set(knobs) - {"noise", "charge"}
        if unknown:
            raise ValueError(
                f"{cls.name} knows only noise= and charge=, not {', '.join(sorted(unknown))}"
            )
        return cls(noise=float(knobs.get("noise", 0.0)), charge=float(knobs.get("charge", 0.0)))

    def board(self, view: GameState) -> Board:
        """The board of the seat to act in ``view``."""
        return self.board_type(view, view.current_player, self.charge)

    def choose(self, view: GameState, rng: random.Random) -> Action:
        actions = view.legal_actions()
        if (forced := obvious(actions)) is not None:
            return forced
        phase = view.phase
        if self.noise and phase is Phase.PLAY and rng.random() < self.noise:
            return rng.choice(actions)
        if phase is Phase.FINISH or phase is Phase.SCOUT_DRAW:
            return choose_draw(view, actions)
        board = self.board(view)
        if phase is Phase.SCOUT_RETURN:
            return choose_return(board, actions)
        if phase is Phase.MUD_DISCARD:
            return max(actions, key=lambda a: board.chance(a.flag, remove=[a.card]))
        ranked = ranked_plays(board, actions)
        return max(ranked, key=lambda sa: sa[0] + rng.random() * 1e-9)[1]


def obvious(actions: list[Action]) -> Action | None:
    """The only legal action, or a claim: every rule-based bot here claims at once."""
    if len(actions) == 1:
        return actions[0]
    return next((a for a in actions if a.kind is Kind.CLAIM), None)


def ranked_plays(board: Board, actions: list[Action]) -> list[tuple[float, Action]]:
    """Every action of the PLAY step with its score on ``board``, best first."""
    scored = [(score_action(board, a), a) for a in actions]
    scored.sort(key=lambda sa: -sa[0])
    return scored


def choose_draw(view: GameState, actions: list[Action]) -> Action:
    """Troops as a rule; a tactic when the hand has none and parity lets one be played soon."""
    kinds = {a.deck: a for a in actions if a.kind in (Kind.DRAW, Kind.SCOUT_DRAW)}
    if len(kinds) < 2:
        return next(iter(kinds.values()), actions[0])
    seat = view.current_player
    hand = view.hands[seat]
    tactics = sum(1 for c in hand if is_tactic(c))
    parity_ok = view.tactics_played[seat] <= view.tactics_played[1 - seat]
    want_tactic = tactics == 0 and parity_ok and len(hand) - tactics >= 3
    return kinds[TACTIC_DECK if want_tactic else TROOP_DECK]


def choose_return(board: Board, actions: list[Action]) -> Action:
    """Put back the card worth least: a dead Leader, else the troop with the worst best play."""
    view, seat = board.view, board.seat
    open_flags = [i for i, f in enumerate(view.flags) if f.is_open(seat)]

    def keep_value(card: int) -> float:
        if card in LEADERS and view.leader_used[seat]:
            return -1.0
        if is_tactic(card):
            return 0.1
        plays = (Action(Kind.PLAY, card=card, flag=i) for i in open_flags)
        return max((score_action(board, a) for a in plays), default=-0.5)

    return min(actions, key=lambda a: keep_value(a.card))
