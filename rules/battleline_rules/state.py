"""The game state: legal actions, `apply`, views of it, and worlds sampled from a view.

A turn is a short sequence of phases, each a decision of the player to act:

    PLAY          play one card (or pass); claims too with start-of-turn timing or deck52
    SCOUT_DRAW    Scout's three draws, one by one
    SCOUT_RETURN  Scout's two cards put back, one by one
    MUD_DISCARD   a side left with 4 cards when Mud leaves discards one (its owner acts)
    FINISH        claims (after-play timing), then one draw or `end`, which ends the turn
    OVER          the game has ended

A view (`GameState.view`) is the same class with every card the viewer may
not see replaced by a placeholder, so one notation, one set of legal-action
code and one sampler serve engine, clients and AI.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from enum import IntEnum
from typing import NamedTuple

from .actions import DISCARD, TACTIC_DECK, TROOP_DECK, Action, Kind, guile_action
from .board import UNCLAIMED, Flag
from .cards import (
    CARD_COUNT,
    ENVIRONMENT,
    LEADERS,
    MORALE,
    NO_CARD,
    TACTIC_CARDS,
    UNKNOWN_TACTIC,
    UNKNOWN_TROOP,
    Tactic,
    is_tactic,
    mask_of,
)
from .claims import ClaimVerdict, decide_claim
from .errors import ErrorCode, RuleError
from .outcome import Outcome, Termination
from .rulesets import RULESETS, ClaimTiming, Options, Ruleset, validate_options

SPECTATOR = -1

# Actions the hot path offers over and over, made once: PLAYS[card][flag], CLAIMS[flag].
PLAYS = [
    [Action(Kind.PLAY, card=card, flag=flag) for flag in range(9)] for card in range(CARD_COUNT)
]
CLAIMS = [Action(Kind.CLAIM, flag=flag) for flag in range(9)]
DRAWS = [Action(Kind.DRAW, deck=TROOP_DECK), Action(Kind.DRAW, deck=TACTIC_DECK)]
END = Action(Kind.END)
PASS = Action(Kind.PASS)


class Phase(IntEnum):
    PLAY = 0
    SCOUT_DRAW = 1
    SCOUT_RETURN = 2
    MUD_DISCARD = 3
    FINISH = 4
    OVER = 5


class Event(NamedTuple):
    """What one applied action did. ``drawn`` (``NO_CARD`` when it drew nothing) is
    secret to ``seat``."""

    ply: int
    seat: int
    action: Action
    drawn: int = NO_CARD


def redact_event(event: Event, viewer: int) -> Event:
    """The event as ``viewer`` (a seat or SPECTATOR) may see it."""
    if event.seat == viewer:
        return event
    action = event.action
    if action.kind is Kind.SCOUT_RETURN:
        hidden = UNKNOWN_TACTIC if is_tactic(action.card) else UNKNOWN_TROOP
        action = action._replace(card=hidden)
    drawn = event.drawn
    if drawn >= 0:
        drawn = UNKNOWN_TACTIC if is_tactic(drawn) else UNKNOWN_TROOP
    return event._replace(action=action, drawn=drawn)


class GameState:
    """A full game (or, with ``viewer`` set, what one viewer may see of it)."""

    __slots__ = (
        "_claim_cache",
        "_flags_shared",
        "_legal",
        "decks",
        "discards",
        "flags",
        "hands",
        "idle_turns",
        "leader_used",
        "may_draw",
        "mud_pending",
        "options",
        "phase",
        "player",
        "ply",
        "progress",
        "public",
        "removed",
        "returned",
        "ruleset",
        "scout_draws",
        "scout_returns",
        "seed",
        "seq",
        "tactics_played",
        "viewer",
        "winner",
    )

    def __init__(
        self, ruleset: Ruleset, options: Options, seed: int | None, *, blank: bool = False
    ) -> None:
        """An empty board; `blank`: only the three arguments set, for `clone` and `view`
        to fill in (they may not skip __init__: the compiled class always runs it)."""
        self.ruleset = ruleset
        self.options = options
        self.seed = seed
        if blank:
            return
        self.flags = [Flag() for _ in range(ruleset.flags)]
        self.hands: list[list[int]] = [[], []]
        self.decks: list[list[int]] = [[], []]  # troop, tactic; the top is the end
        self.removed: list[int] = []
        self.discards: list[list[int]] = [[], []]
        # Cards each seat put back with Scout: that seat knows where they are.
        self.returned: list[list[int]] = [[], []]
        self.player = options.first_player
        self.phase = Phase.PLAY
        self.ply = 0
        self.seq = 0
        self.scout_draws = 0
        self.scout_returns = 0
        self.may_draw = True
        self.mud_pending: list[tuple[int, int]] = []  # (seat, flag) still to discard
        self.idle_turns = 0
        self.progress = False  # something was played, claimed or drawn this turn
        self.winner: int | None = None
        self.viewer: int | None = None  # None: the full state
        self.tactics_played = [0, 0]
        self.leader_used = [False, False]
        self.public = 0  # mask of cards face up on the table or in a discard pile
        self._claim_cache: dict[tuple[int, int], tuple[int, ClaimVerdict]] = {}
        self._legal: list[Action] | None = None
        # Bit i set: flags[i] is also another state's Flag object (a clone's or a view's,
        # or the one this was cloned from), so it is copied before its first change here.
        self._flags_shared = 0

    # ----------------------------------------------------------------- basics

    @property
    def hand_size(self) -> int:
        return self.options.hand_size or self.ruleset.hand_size

    @property
    def is_over(self) -> bool:
        return self.phase is Phase.OVER

    @property
    def current_player(self) -> int:
        """The seat that must act now (the owner of a side Mud left too full)."""
        if self.phase is Phase.MUD_DISCARD:
            return self.mud_pending[0][0]
        return self.player

    @property
    def available(self) -> int:
        """Troop cards not face up anywhere: what completions may draw on."""
        return self.ruleset.troop_mask & ~self.public

    def claimed_by(self, seat: int) -> list[int]:
        return [i for i, f in enumerate(self.flags) if f.claimed == seat]

    def outcome(self) -> Outcome | None:
        """How and for whom the game ended; None while it goes on.

        A game ends in one of three ways: a claim wins it (`Ruleset.victory`),
        two idle turns settle it (`_settle_stalemate`, which leaves `idle_turns`
        at 2; a settled flag can still win by the ruleset), or a seat resigns
        (`resign`: the winner then holds no winning flags, the turns were not idle).
        """
        if self.phase is not Phase.OVER:
            return None
        winner = self.winner
        if winner is not None:
            victory = self.ruleset.victory(self.claimed_by(winner))
            if victory is not None:
                return Outcome(victory, winner)
        if self.idle_turns >= 2:
            return Outcome(Termination.STALEMATE, winner)
        return Outcome(Termination.RESIGNATION, winner)

    def __reduce__(self) -> tuple[Callable[[str], GameState], tuple[str]]:
        """Pickled as its position text (the AI sends views to search processes): the
        compiled class (setup.py) is only built through its constructor."""
        from .notation import dump_position, load_position

        return load_position, (dump_position(self),)

    def __repr__(self) -> str:
        """The position text, as python-chess prints a board as its FEN: a failing
        test shows the position, ready for `load_position` or `battleline analyze`."""
        from .notation import dump_position

        return f"load_position(\"\"\"\n{dump_position(self)}\"\"\")"

    def __eq__(self, other: object) -> bool:
        """Equal positions: the same text (it round-trips exactly, so it names every
        field; caches are not compared)."""
        from .notation import dump_position

        return isinstance(other, GameState) and dump_position(self) == dump_position(other)

    def clone(self) -> GameState:
        new = GameState(self.ruleset, self.options, self.seed, blank=True)
        # Flags are shared and copied on their first change (`_flag`): a turn changes one
        # or two of nine, and a clone for a view or a search step often changes none.
        new.flags = self.flags[:]
        new._flags_shared = self._flags_shared = (1 << len(self.flags)) - 1
        new.hands = [self.hands[0][:], self.hands[1][:]]
        new.decks = [self.decks[0][:], self.decks[1][:]]
        new.removed = self.removed[:]
        new.discards = [self.discards[0][:], self.discards[1][:]]
        new.returned = [self.returned[0][:], self.returned[1][:]]
        new.player, new.phase, new.ply, new.seq = self.player, self.phase, self.ply, self.seq
        new.scout_draws, new.scout_returns = self.scout_draws, self.scout_returns
        new.may_draw, new.mud_pending = self.may_draw, self.mud_pending[:]
        new.idle_turns, new.progress, new.winner = self.idle_turns, self.progress, self.winner
        new.viewer = self.viewer
        new.tactics_played, new.leader_used = self.tactics_played[:], self.leader_used[:]
        new.public = self.public
        new._claim_cache = dict(self._claim_cache)
        new._legal = self._legal
        return new

    # ------------------------------------------------------------------ claims

    def claim_verdict(self, flag: int, seat: int) -> ClaimVerdict:
        """Whether ``seat`` could claim ``flag`` now, and why (cached while exact).

        A verdict stays exact while the flag is unchanged and every card it
        names is still unseen: the opponent's best completion can only get
        weaker as unseen cards become fewer, so while its cards are all still
        unseen it is still the best, and `best_formation` (deterministic, taking
        the first cards that fit) picks the same cards again. Once one of them is
        face up, the verdict (a granted claim stays granted) is decided afresh
        so that its explanation never names a card already on the table.
        """
        f = self.flags[flag]
        cached = self._claim_cache.get((flag, seat))
        if cached is not None and cached[0] == f.version:
            verdict = cached[1]
            theirs = verdict.theirs
            if theirs is None or not theirs.added:
                return verdict
            mask = mask_of(theirs.added)
            if self.available & mask == mask:
                return verdict
        verdict = decide_claim(self.ruleset, f, flag, seat, self.available)
        self._claim_cache[(flag, seat)] = (f.version, verdict)
        return verdict

    def claims_allowed(self) -> bool:
        """Whether the player to act may claim flags in this step."""
        if self.phase is Phase.PLAY:
            return (
                self.ruleset.claim_any_time
                or self.options.claim_timing is ClaimTiming.START_OF_TURN
            )
        if self.phase is Phase.FINISH:  # deck52 too: its start-of-turn option is honoured
            return self.options.claim_timing is ClaimTiming.AFTER_PLAY
        return False

    def claim_actions(self) -> list[Action]:
        """The claims the player to act may make now (the first entries of
        `legal_actions`), without listing the rest. They rest on the cards face up
        alone, so a server can make a seat's automatic claims in a time that tells
        nothing of that seat's hand."""
        if self.is_over or self.viewer not in (None, self.current_player):
            return []
        return self._claim_actions() if self.claims_allowed() else []

    def _claim_actions(self) -> list[Action]:
        seat = self.player
        return [
            CLAIMS[i]
            for i, f in enumerate(self.flags)
            if f.claimed == UNCLAIMED
            and len(f.cards[seat]) >= f.size
            and self.claim_verdict(i, seat).granted
        ]

    # ----------------------------------------------------------- legal actions

    def can_place_troop(self, seat: int) -> bool:
        """Whether ``seat`` holds a troop card and has an open slot for it."""
        return any(not is_tactic(c) for c in self.hands[seat]) and any(
            f.is_open(seat) for f in self.flags
        )

    def tactic_refusal(self, seat: int, card: int) -> RuleError | None:
        """Why ``seat`` may not play tactic ``card`` now (None: it may)."""
        if not self.ruleset.tactics:
            return RuleError(
                ErrorCode.NOT_IN_RULESET, f"{self.ruleset.name} is played without tactics cards"
            )
        mine, theirs = self.tactics_played[seat], self.tactics_played[1 - seat]
        if mine > theirs:
            return RuleError(
                ErrorCode.TACTICS_PARITY,
                f"you have played {mine} tactics and your opponent {theirs}: "
                "wait until they play one",
            )
        if card in LEADERS and self.leader_used[seat]:
            return RuleError(
                ErrorCode.LEADER_USED,
                "you have already played a Leader: a second one stays in hand",
            )
        return None

    def legal_actions(self) -> list[Action]:
        """Every action the player to act may take, in a fixed order: claims first.

        On a view only the viewer's own actions are known: when another seat
        is to act, the list is empty.
        """
        if self._legal is None:
            self._legal = self._generate()
        return self._legal

    def _generate(self) -> list[Action]:
        phase, seat = self.phase, self.current_player
        if phase is Phase.OVER or self.viewer not in (None, seat):
            return []
        if phase is Phase.SCOUT_DRAW:
            return [
                Action(Kind.SCOUT_DRAW, deck=d) for d in (TROOP_DECK, TACTIC_DECK) if self.decks[d]
            ]
        if phase is Phase.SCOUT_RETURN:
            return [Action(Kind.SCOUT_RETURN, card=c) for c in dict.fromkeys(self.hands[seat])]
        if phase is Phase.MUD_DISCARD:
            flag = self.mud_pending[0][1]
            return [
                Action(Kind.MUD_DISCARD, card=c, flag=flag) for c in self.flags[flag].cards[seat]
            ]
        claims = self._claim_actions() if self.claims_allowed() else []
        if phase is Phase.FINISH:
            draws = (
                [DRAWS[d] for d in (TROOP_DECK, TACTIC_DECK) if self.decks[d]]
                if self._draw_due()
                else []
            )
            return claims + (draws or [END])
        troops, open_flags, others = self._play_parts(seat)
        return claims + [PLAYS[c][i] for c in troops for i in open_flags] + others

    def random_action(self, rng: random.Random) -> Action:
        """A uniformly random legal action (the same distribution as choosing from
        `legal_actions`), without listing every troop play: the rollout hot path."""
        if self._legal is not None or self.phase is not Phase.PLAY or self.viewer is not None:
            return rng.choice(self.legal_actions())
        claims = self._claim_actions() if self.claims_allowed() else []
        troops, open_flags, others = self._play_parts(self.player)
        placements = len(troops) * len(open_flags)
        index = rng.randrange(len(claims) + placements + len(others))
        if index < len(claims):
            return claims[index]
        index -= len(claims)
        if index < placements:
            card, flag = divmod(index, len(open_flags))
            return PLAYS[troops[card]][open_flags[flag]]
        return others[index - placements]

    def _draw_due(self) -> bool:
        return self.may_draw and len(self.hands[self.player]) < self.hand_size

    def _play_parts(self, seat: int) -> tuple[list[int], list[int], list[Action]]:
        """The PLAY step's options: troop cards x open flags, then tactic plays and pass."""
        flags = self.flags
        open_flags = [
            i for i, f in enumerate(flags) if f.claimed < 0 and len(f.cards[seat]) < f.size
        ]
        hand = self.hands[seat]
        troops = [c for c in hand if c not in TACTIC_CARDS]
        others: list[Action] = []
        if len(troops) < len(hand):
            live = [i for i, f in enumerate(flags) if f.claimed < 0]
            for card in dict.fromkeys(c for c in hand if c in TACTIC_CARDS):
                if card >= 0 and self.tactic_refusal(seat, card) is None:
                    others += self._tactic_plays(seat, card, open_flags, live)
        if not (troops and open_flags):
            others.append(PASS)
        return troops, open_flags, others

    def _tactic_plays(
        self, seat: int, card: int, open_flags: list[int], live: list[int]
    ) -> list[Action]:
        flags, other = self.flags, 1 - seat
        if card in MORALE:
            return [PLAYS[card][i] for i in open_flags]
        if card in ENVIRONMENT:
            return [
                Action(Kind.PLAY, card=card, flag=i)
                for i in live
                if all(e != card for e, _ in flags[i].env)
            ]
        if card == Tactic.SCOUT:
            return [Action(Kind.PLAY, card=card)] if self.decks[0] or self.decks[1] else []
        actions = []
        if card == Tactic.REDEPLOY:
            for i in live:
                for target in self.own_cards(i, seat):
                    actions.append(guile_action(
                        Kind.REDEPLOY, card=card, flag=i, target=target, to_flag=DISCARD
                    ))
                    movable = (j for j in live if j != i)
                    dests = [
                        j
                        for j in movable
                        if (
                            all(e != target for e, _ in flags[j].env)
                            if target in ENVIRONMENT
                            else flags[j].is_open(seat)
                        )
                    ]
                    actions += [
                        guile_action(Kind.REDEPLOY, card=card, flag=i, target=target, to_flag=j)
                        for j in dests
                    ]
        elif card == Tactic.DESERTER:
            for i in live:
                actions.extend(
                    guile_action(Kind.DESERTER, card=card, flag=i, target=target)
                    for target in self.own_cards(i, other)
                )
        elif card == Tactic.TRAITOR:
            for i in live:
                for target in flags[i].cards[other]:
                    if not is_tactic(target):
                        actions += [
                            guile_action(Kind.TRAITOR, card=card, flag=i, target=target, to_flag=j)
                            for j in open_flags
                        ]
        return actions

    def own_cards(self, flag: int, seat: int) -> list[int]:
        """``seat``'s cards at ``flag``: its side's, and the environment tactics it played."""
        f = self.flags[flag]
        return f.cards[seat] + [card for card, owner in f.env if owner == seat]

    # ------------------------------------------------------------------- apply

    def apply(self, action: Action) -> Event:
        """Apply a legal action; anything else raises RuleError and changes nothing."""
        if self.viewer is not None:
            raise RuleError(ErrorCode.WRONG_PHASE, "a view cannot be played on; sample a world")
        if action not in self.legal_actions():
            from .diagnosis import diagnose  # the refusal path only (it imports this module)

            raise diagnose(self, action)
        return self.apply_unchecked(action)

    def apply_unchecked(self, action: Action) -> Event:
        """Apply an action taken from `legal_actions` (the search hot path)."""
        seat, ply = self.current_player, self.ply
        self._legal = None
        drawn = NO_CARD
        kind = action.kind
        if kind is Kind.PLAY:
            self._play(seat, action)
        elif kind is Kind.CLAIM:
            self._claim(seat, action.flag)
        elif kind is Kind.DRAW:
            drawn = self._draw(seat, action.deck)
            self._end_turn()
        elif kind is Kind.END:
            self._end_turn()
        elif kind is Kind.PASS:
            self._after_play()
        elif kind is Kind.SCOUT_DRAW:
            drawn = self._draw(seat, action.deck)
            self.scout_draws -= 1
            if not self.scout_draws or not (self.decks[0] or self.decks[1]):
                self._start_scout_return()
        elif kind is Kind.SCOUT_RETURN:
            self._return(seat, action.card)
        elif kind is Kind.MUD_DISCARD:
            self._mud_discard(seat, action)
        else:
            self._guile(seat, action)
        return Event(ply, seat, action, drawn)

    def _play(self, seat: int, action: Action) -> None:
        card = action.card
        self.hands[seat].remove(card)
        self.progress = True
        self.public |= 1 << card
        if is_tactic(card):
            self.tactics_played[seat] += 1
            if card in LEADERS:
                self.leader_used[seat] = True
        if card == Tactic.SCOUT:
            self.discards[seat].append(card)
            self.phase = Phase.SCOUT_DRAW
            self.scout_draws = 3
            self.may_draw = False
            return
        flag = self._flag(action.flag)
        if card in ENVIRONMENT:
            flag.add_env(card, seat)
        else:
            self.seq += 1
            flag.place(seat, card, self.seq)
        self._after_play()

    def _guile(self, seat: int, action: Action) -> None:
        card, target = action.card, action.target
        self.hands[seat].remove(card)
        self.discards[seat].append(card)
        self.public |= 1 << card
        self.tactics_played[seat] += 1
        self.progress = True
        owner = seat if action.kind is Kind.REDEPLOY else 1 - seat
        source = self._flag(action.flag)
        if target in ENVIRONMENT:
            source.remove_env(target, owner)
        else:
            source.take(owner, target)
        if action.kind is Kind.DESERTER or action.to_flag == DISCARD:
            self.discards[owner].append(target)
        elif target in ENVIRONMENT:
            self._flag(action.to_flag).add_env(target, seat)
        else:
            self.seq += 1
            self._flag(action.to_flag).place(seat, target, self.seq)
        if target == Tactic.MUD:
            self.mud_pending = [
                (s, action.flag) for s in (seat, 1 - seat) if len(source.cards[s]) > source.size
            ]
            if self.mud_pending:
                self.phase = Phase.MUD_DISCARD
                return
        self._after_play()

    def _mud_discard(self, seat: int, action: Action) -> None:
        self._flag(action.flag).take(seat, action.card)
        self.discards[seat].append(action.card)
        self.public |= 1 << action.card
        self.mud_pending.pop(0)
        if not self.mud_pending:
            self._after_play()

    def _flag(self, index: int) -> Flag:
        """Flag ``index`` to change: this state's own (copied first if shared)."""
        if self._flags_shared >> index & 1:
            self._flags_shared &= ~(1 << index)
            flag = self.flags[index] = self.flags[index].copy()
            return flag
        return self.flags[index]

    def _after_play(self) -> None:
        self.phase = Phase.FINISH

    def _start_scout_return(self) -> None:
        self.scout_returns = min(2, len(self.hands[self.player]))
        self.phase = Phase.SCOUT_RETURN if self.scout_returns else Phase.FINISH

    def _return(self, seat: int, card: int) -> None:
        self.hands[seat].remove(card)
        self.decks[TACTIC_DECK if is_tactic(card) else TROOP_DECK].append(card)
        self.returned[seat].append(card)
        self.scout_returns -= 1
        if not self.scout_returns:
            self._after_play()

    def _draw(self, seat: int, deck: int) -> int:
        card = self.decks[deck].pop()
        self.hands[seat].append(card)
        self.progress = True
        return card

    def _claim(self, seat: int, flag: int) -> None:
        self._flag(flag).claim(seat)
        self.progress = True
        if self.ruleset.has_won(self.claimed_by(seat)):
            self._finish(seat)

    def _end_turn(self) -> None:
        self.idle_turns = 0 if self.progress else self.idle_turns + 1
        if self.idle_turns >= 2:
            self._settle_stalemate()
            return
        self.progress = False
        self.player = 1 - self.player
        self.ply += 1
        self.phase = Phase.PLAY
        self.may_draw = True

    def _settle_stalemate(self) -> None:
        """Two turns in a row changed nothing, so nothing ever will (docs/RULES.md).

        Each open flag a seat could prove goes to it; then a seat that has won
        by the ruleset wins, else the seat with more flags, else it is a draw.
        """
        for i, flag in enumerate(self.flags):
            for seat in (self.player, 1 - self.player):
                if (
                    flag.claimed == UNCLAIMED
                    and len(flag.cards[seat]) >= flag.size
                    and self.claim_verdict(i, seat).granted
                ):
                    flag = self._flag(i)
                    flag.claim(seat)
        won = [s for s in (0, 1) if self.ruleset.has_won(self.claimed_by(s))]
        counts = [len(self.claimed_by(s)) for s in (0, 1)]
        if len(won) == 1:
            self._finish(won[0])
        else:
            self._finish(None if counts[0] == counts[1] else counts.index(max(counts)))

    def _finish(self, winner: int | None) -> None:
        self.winner = winner
        self.phase = Phase.OVER
        self._legal = None

    def resign(self, seat: int) -> None:
        """``seat`` gives up: the opponent wins at once."""
        if self.is_over:
            raise RuleError(ErrorCode.GAME_OVER, "the game is over")
        self._finish(1 - seat)

    # ------------------------------------------------------------------ views

    def view(self, viewer: int) -> GameState:
        """What ``viewer`` (seat 0, 1 or SPECTATOR) may see; everything once the game is over.

        The single place where hidden information is removed: hands, deck
        order and removed cards become placeholders, except the viewer's own
        hand and the cards it put back with Scout (wherever they are now).
        Built field by field rather than cloned and then overwritten: engines
        build a view for every answer. Like a clone, it shares the state's Flag
        objects (public anyway) until either side changes one: every change of a
        flag goes through `_flag`, which copies a shared flag first, so change a
        state only through `apply`.
        """
        view = GameState(self.ruleset, self.options, None, blank=True)
        view.flags = self.flags[:]
        view._flags_shared = self._flags_shared = (1 << len(self.flags)) - 1
        view.discards = [self.discards[0][:], self.discards[1][:]]
        view.player, view.phase, view.ply, view.seq = self.player, self.phase, self.ply, self.seq
        view.scout_draws, view.scout_returns = self.scout_draws, self.scout_returns
        view.may_draw, view.mud_pending = self.may_draw, self.mud_pending[:]
        view.idle_turns, view.progress, view.winner = self.idle_turns, self.progress, self.winner
        view.viewer = viewer
        view.tactics_played, view.leader_used = self.tactics_played[:], self.leader_used[:]
        view.public = self.public
        view._claim_cache = {}
        # The full state's legal actions are the viewer's only if the viewer is to act.
        view._legal = self._legal if viewer == self.current_player else None
        hands, decks, returned = self.hands, self.decks, self.returned
        if self.is_over:
            view.seed = self.seed
            view.hands = [hands[0][:], hands[1][:]]
            view.decks = [decks[0][:], decks[1][:]]
            view.removed = self.removed[:]
            view.returned = [returned[0][:], returned[1][:]]
            return view
        known = set(returned[viewer]) if viewer != SPECTATOR else set()
        view.hands = [
            hands[seat][:] if seat == viewer else _hidden(hands[seat], known) for seat in (0, 1)
        ]
        view.decks = [_hidden_deck(decks[0], UNKNOWN_TROOP, known),
                      _hidden_deck(decks[1], UNKNOWN_TACTIC, known)]
        view.removed = [UNKNOWN_TROOP for _ in self.removed]
        view.returned = [
            [
                c
                for c in returned[s]
                if s == viewer
                and c in known
                and (c in decks[0] or c in decks[1] or c in hands[1 - s])
            ]
            for s in (0, 1)
        ]
        return view

    def sample_world(self, rng: random.Random) -> GameState:
        """A full state drawn uniformly from those consistent with this view."""
        world = self.clone()
        world.viewer = None
        seen: set[int] = set()
        for cards in (*self.hands, *self.decks, self.removed, *self.discards):
            seen.update(c for c in cards if c >= 0)
        for f in self.flags:
            seen.update(f.cards[0] + f.cards[1] + [c for c, _ in f.env])
        troops = [c for c in self.ruleset.troops if c not in seen]
        tactics = [c for c in self.ruleset.tactics if c not in seen]
        rng.shuffle(troops)
        rng.shuffle(tactics)
        pools = {UNKNOWN_TROOP: troops, UNKNOWN_TACTIC: tactics}

        def fill(cards: list[int]) -> list[int]:
            return [pools[c].pop() if c < 0 else c for c in cards]

        world.hands = [fill(h) for h in self.hands]
        world.decks = [fill(d) for d in self.decks]
        world.removed = fill(self.removed)
        if troops or tactics:
            raise ValueError("view is inconsistent: unseen cards left over after dealing")
        return world


def _hidden(cards: list[int], known: set[int]) -> list[int]:
    """A hand as a viewer sees it: the cards it knows (its own Scout returns) in card
    order, then a placeholder per troop, then per tactic. Never the hand's own order:
    which slot a played card leaves would tell how long it was held (seventh audit)."""
    shown = sorted(c for c in cards if c in known) if known else []
    tactics = sum(1 for c in cards if c in TACTIC_CARDS and c not in known)
    troops = len(cards) - len(shown) - tactics
    return shown + [UNKNOWN_TROOP] * troops + [UNKNOWN_TACTIC] * tactics


def _hidden_deck(deck: list[int], placeholder: int, known: set[int]) -> list[int]:
    """A deck as a viewer sees it: one kind of card (troops or tactics), so one
    placeholder, except the viewer's own Scout returns."""
    if known.isdisjoint(deck):
        return [placeholder] * len(deck)
    return [c if c in known else placeholder for c in deck]


def new_game(
    ruleset: str | Ruleset, options: Options | None = None, seed: int | None = None
) -> GameState:
    """Shuffle with ``seed`` (random if None) and deal a new game."""
    rules = RULESETS[ruleset] if isinstance(ruleset, str) else ruleset
    options = options or Options()
    validate_options(rules, options)
    if seed is None:
        seed = random.SystemRandom().getrandbits(63)
    rng = random.Random(seed)
    state = GameState(rules, options, seed)
    troops, tactics = list(rules.troops), list(rules.tactics)
    rng.shuffle(troops)
    rng.shuffle(tactics)
    for _ in range(rules.hidden_removed):
        state.removed.append(troops.pop())
    for _ in range(state.hand_size):
        for seat in (options.first_player, 1 - options.first_player):
            state.hands[seat].append(troops.pop())
    state.decks = [troops, tactics]
    return state
