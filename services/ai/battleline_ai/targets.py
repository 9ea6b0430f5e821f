"""`targets`: a yardstick standing in for a public rule-based, probability-driven bot.

Written from the public description of a rule-based bot's strategy (the Go
project rezder/go-battleline's "battbot"): its ideas, not its code or text,
rebuilt on this project's own odds. The ideas it keeps:

- Every open flag has a *target*: the formations the opponent can still reach
  there. A troop's play is judged by how it moves the odds of beating that
  target (`odds.FlagOdds`), so it builds toward formations that outrank what
  the other side can make, and answers a flag the opponent has started.
- Flags have a priority: the centre flags count more than the edges, and a
  flag one or two away from a decided flag counts more still (three in a row
  is won or lost there), on top of `evaluation.flag_weights`.
- A flag already lost (the opponent's side is complete and nothing reachable
  beats it) is where cards nobody needs go: while one is open, a card whose
  loss hurts no other flag is dumped there instead of committing good cards.
- Tactics are spent to save a lost flag or to make a flag a sure win, not to
  nudge odds; a fresh tactic is drawn only when the hand has none and the
  game is close to decided or several flags could use one.
- A Scout return gives back dead or surplus tactics first, then the troops
  the flags need least.

Any phase it has no rule for (Mud's discard, a decision with no troop to
play) goes to `prob`'s decision, so it plays every ruleset the other bots do.
"""

from __future__ import annotations

import random

from battleline_rules import DISCARD, TACTIC_DECK, TROOP_DECK, Action, GameState, Kind, Phase
from battleline_rules.board import UNCLAIMED
from battleline_rules.cards import (
    ENVIRONMENT,
    LEADERS,
    MORALE,
    TACTICS,
    VALUE,
    Tactic,
    is_tactic,
)

from .evaluation import flag_weights
from .heuristic import choose_draw, choose_return, obvious, ranked_plays, score_action
from .prob import OddsBoard, ProbBot

# Flag priority: a weight added per unit of (position + nearness to a decided flag).
PRIORITY_UNIT = 0.1
# Position units by distance from the nearest edge (0, 1, 2 or more).
POSITION_UNITS = (1, 2, 3)
# Nearness units for a flag one and two away from a claimed flag.
NEAR_UNITS = (4, 3)
# A troop whose loss costs another flag at most this (weighted chance) may be dumped.
DUMP_LIMIT = 0.03
# Share of a troop's best use elsewhere charged to its play (`heuristic.Board`).
CHARGE = 0.3
# A tactic outside the rescue and sure-win rules must beat the best troop by this much.
TACTIC_MARGIN = 0.25
# A flag at least this likely is as good as won; a rescue must reach WIN or, when the
# lost flag would lose the game, anything above LOST.
SURE = 0.95
WIN = 0.5
LOST = 0.02
# Scout-return order for tactics, least wanted first.
RETURN_ORDER = (
    Tactic.REDEPLOY,
    Tactic.SCOUT,
    Tactic.SHIELD,
    Tactic.CAVALRY,
    Tactic.MUD,
    Tactic.FOG,
    Tactic.DARIUS,
    Tactic.ALEXANDER,
    Tactic.DESERTER,
    Tactic.TRAITOR,
)


def priority_weights(view: GameState, seat: int) -> list[float]:
    """`flag_weights` plus the position and nearness priority: where a flag matters more."""
    flags = view.flags
    n = len(flags)
    weights = flag_weights(view, seat)
    claimed = [i for i, f in enumerate(flags) if f.claimed != UNCLAIMED]
    for i, flag in enumerate(flags):
        if flag.claimed != UNCLAIMED:
            continue
        units = POSITION_UNITS[min(i, n - 1 - i, len(POSITION_UNITS) - 1)]
        for j in claimed:
            d = abs(i - j)
            if 1 <= d <= len(NEAR_UNITS):
                units += NEAR_UNITS[d - 1]
        weights[i] += PRIORITY_UNIT * units
    return weights


class TargetsBoard(OddsBoard):
    """Exact odds of beating each flag's target, weighted by the flag priority."""

    def __init__(self, view: GameState, seat: int, charge: float = CHARGE) -> None:
        super().__init__(view, seat, charge)
        self.weights = priority_weights(view, seat)

    def lost(self, index: int) -> bool:
        """Open for us, the opponent complete, and nothing we can reach beats it."""
        flag = self.view.flags[index]
        return (
            flag.claimed == UNCLAIMED
            and len(flag.cards[1 - self.seat]) >= flag.size
            and self.now(index) <= 0.0
        )


def after_at(board: TargetsBoard, action: Action) -> tuple[int, float]:
    """The flag a tactic is aimed at and our chance there once it is played."""
    kind, card, i = action.kind, action.card, action.flag
    flags = board.view.flags
    if kind is Kind.PLAY:
        if card in ENVIRONMENT:
            return i, board.chance(i, env=[*flags[i].env, (card, board.seat)])
        return i, board.chance(i, add=[card])
    if kind is Kind.DESERTER:
        if action.target in ENVIRONMENT:
            return i, board.chance(i, env=[e for e in flags[i].env if e[0] != action.target])
        return i, board.chance(i, take=[action.target])
    if kind is Kind.TRAITOR:
        return i, board.chance(i, take=[action.target])
    # Redeploy: a rescue brings a card to the lost flag, or takes an environment away.
    if action.target in ENVIRONMENT:
        return i, board.chance(i, env=[e for e in flags[i].env if e[0] != action.target])
    j = action.to_flag
    if j == DISCARD:
        return i, board.chance(i, remove=[action.target])
    return j, board.chance(j, add=[action.target])


class TargetsBot:
    """Battbot-style priorities on this project's exact odds (spec ``targets``)."""

    name = "targets"

    def __init__(self) -> None:
        self.fallback = ProbBot()

    def choose(self, view: GameState, rng: random.Random) -> Action:
        actions = view.legal_actions()
        if (forced := obvious(actions)) is not None:
            return forced
        phase = view.phase
        if phase is Phase.FINISH or phase is Phase.SCOUT_DRAW:
            return choose_deck(view, actions)
        if phase is Phase.SCOUT_RETURN:
            return return_card(TargetsBoard(view, view.current_player), actions)
        if phase is not Phase.PLAY:
            return self.fallback.choose(view, rng)
        return self.play(TargetsBoard(view, view.current_player), actions, rng)

    def play(self, board: TargetsBoard, actions: list[Action], rng: random.Random) -> Action:
        """The PLAY step: rescue, dump on a lost flag, else the best troop by odds."""
        troops = [a for a in actions if a.kind is Kind.PLAY and not is_tactic(a.card)]
        tactics = [a for a in actions if a not in troops and a.kind is not Kind.PASS]
        lost = [i for i, f in enumerate(board.view.flags) if board.lost(i)]
        rescue = rescue_move(board, tactics, lost)
        if rescue is not None:
            return rescue
        if not troops:
            return self.fallback.choose(board.view, rng)
        dump = dump_move(board, troops, lost)
        if dump is not None:
            return dump
        best_score, best = ranked_plays(board, troops)[0]
        for score, action in ranked_plays(board, tactics):
            if score <= 0.0:
                break
            if sure_win(board, action) or score > best_score + TACTIC_MARGIN:
                return action
        return best


def rescue_move(board: TargetsBoard, tactics: list[Action], lost: list[int]) -> Action | None:
    """A tactic that turns a lost flag into a likely win, or keeps a game-losing one open."""
    if not lost or not tactics:
        return None
    view, seat = board.view, board.seat
    losing = view.ruleset.has_won([*view.claimed_by(1 - seat), *lost])
    best: tuple[float, Action] | None = None
    for action in tactics:
        if action.card == Tactic.SCOUT:
            continue
        index, after = after_at(board, action)
        if index not in lost:
            continue
        if after >= WIN or (losing and after > LOST):
            score = score_action(board, action)
            if best is None or score > best[0]:
                best = (score, action)
    return None if best is None else best[1]


def sure_win(board: TargetsBoard, action: Action) -> bool:
    """A morale tactic that makes an unsure flag as good as won."""
    if action.kind is not Kind.PLAY or action.card not in MORALE:
        return False
    index, after = after_at(board, action)
    return board.now(index) < SURE <= after


def dump_move(board: TargetsBoard, troops: list[Action], lost: list[int]) -> Action | None:
    """While a lost flag is open, the troop no other flag misses goes there."""
    open_lost = [i for i in lost if board.view.flags[i].is_open(board.seat)]
    if not open_lost:
        return None
    index = max(open_lost, key=lambda i: board.weights[i])
    cards = {a.card for a in troops if a.flag == index}
    if not cards:
        return None
    card = min(cards, key=lambda c: (board.elsewhere(c, index), VALUE[c]))
    if board.elsewhere(card, index) > DUMP_LIMIT:
        return None
    return Action(Kind.PLAY, card=card, flag=index)


def choose_deck(view: GameState, actions: list[Action]) -> Action:
    """Troops as a rule; a tactic when the hand has none, one may be played, and either
    the game is close to decided or flags wait for one (the opponent one card short)."""
    decks = {a.deck: a for a in actions if a.kind in (Kind.DRAW, Kind.SCOUT_DRAW)}
    if len(decks) < 2:
        return choose_draw(view, actions)
    seat = view.current_player
    hand = view.hands[seat]
    if any(is_tactic(c) for c in hand):
        return decks[TROOP_DECK]
    if view.tactics_played[seat] > view.tactics_played[1 - seat]:
        return decks[TROOP_DECK]
    unseen = [t for t in TACTICS if not view.public >> t & 1 and t not in hand]
    if not unseen:
        return decks[TROOP_DECK]
    if view.phase is Phase.SCOUT_DRAW:
        return choose_draw(view, actions)
    flags = view.flags
    mine, theirs = view.claimed_by(seat), view.claimed_by(1 - seat)
    ruleset = view.ruleset
    open_flags = [i for i, f in enumerate(flags) if f.claimed == UNCLAIMED]
    close = any(
        ruleset.has_won([*mine, i]) or ruleset.has_won([*theirs, i]) for i in open_flags
    )
    waiting = sum(
        1 for i in open_flags
        if len(flags[i].cards[1 - seat]) >= flags[i].size - 1
        and len(flags[i].cards[seat]) < flags[i].size
    )
    return decks[TACTIC_DECK if close or waiting >= 3 else TROOP_DECK]


def return_card(board: TargetsBoard, actions: list[Action]) -> Action:
    """Give back a dead Leader or a surplus tactic first, else the least needed troop."""
    view, seat = board.view, board.seat
    held = [c for c in view.hands[seat] if is_tactic(c)]
    by_card = {a.card: a for a in actions}
    leaders = [c for c in held if c in LEADERS]
    dead = leaders if view.leader_used[seat] else leaders[1:]  # only one Leader may be played
    spare = [c for c in (Tactic.REDEPLOY, Tactic.SCOUT) if c in held and len(held) > 1]
    for card in (*dead, *spare):
        if card in by_card:
            return by_card[card]
    troops = [a for a in actions if not is_tactic(a.card)]
    if troops:
        return choose_return(board, troops)
    return min(actions, key=lambda a: RETURN_ORDER.index(a.card) if a.card in RETURN_ORDER
               else -1)
