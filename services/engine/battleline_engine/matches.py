"""The match domain: read (with the clock check), act, resign, time out. Creating and
joining matches is `seating`'s.

Every write follows one pattern: read the match (one Redis round trip), work
on a clone of its state with the rules core, then commit state, events,
progress fields, clock deadline and the idempotent response together with a
version check (storage.matches.commit). A lost race is a CONFLICT, never a silent
drop. Domain code: no grpc and no protobuf here. Callers get domain values back
or a `Refusal`; an action's answer is built by the servicer's `Answer`, given in,
since it is stored with the commit (a repeated action id gets the same answer).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Generic, TypeVar

import redis.exceptions

from battleline_rules import (
    Action,
    Event,
    GameState,
    RuleError,
    dump_position,
    format_action,
    next_first_player,
    parse_action,
    series_points,
)
from battleline_rules import Kind as ActionKind
from battleline_rules.errors import shown

from .clocks import ClockState, advance, start_clock
from .errors import Kind, Refusal, from_rule_error, invalid, not_found, precondition
from .model import (
    CANCELLED,
    Match,
    Opponent,
    StateCache,
    Status,
    deal,
    id_kept_s,
    parse_match,
    progress_fields,
    stored_event,
)
from .replays import Replay
from .storage import CommitResult, CommitStatus, MatchRecord, Storage, now_ms

A = TypeVar("A")  # an action's answer, as the servicer layer sends it

MAX_ACTIONS = 16  # per request; a full turn is play + claims + draw
# What may follow the action that ended the game in one request: the rest of its turn.
TURN_ENDS = frozenset({ActionKind.CLAIM, ActionKind.DRAW, ActionKind.END})
STORE_ERRORS = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)
_WAKE_RETRIES_S = (0.1, 0.3, 1.0, None)  # pauses before each new try of `_wake_ai`
log = logging.getLogger(__name__)


@dataclass(slots=True)
class Outcome:
    """What a commit will write: the new state and everything that goes with it."""

    state: GameState
    events: list[dict[str, str]]
    match: Match  # the match as it will read after the commit

    @property
    def first_event(self) -> int:
        """The number `events[0]` gets."""
        return self.match.record.last_event - len(self.events) + 1


@dataclass(frozen=True, slots=True)
class Answer(Generic[A]):
    """How the servicer layer answers an action: `build` makes the answer from the
    outcome and the acting seat, `encode` and `decode` store it with the commit and read
    it back for a repeated action id."""

    build: Callable[[Outcome, int], A]
    encode: Callable[[A], bytes]
    decode: Callable[[bytes], A]


# Actions are immutable and their texts few (cards x flags): each is parsed once.
_parse_action = lru_cache(maxsize=16384)(parse_action)


def parse_actions(texts: list[str]) -> list[Action]:
    """Parse the action texts of a request; malformed ones never reach the rules core."""
    if not texts:
        raise invalid("no-actions", "send at least one action")
    if len(texts) > MAX_ACTIONS:
        raise invalid("too-many-actions", f"at most {MAX_ACTIONS} actions per request")
    actions = []
    for i, text in enumerate(texts, 1):
        if len(text) > 64:
            raise invalid("malformed", f"action {i} is longer than 64 characters")
        try:
            actions.append(_parse_action(text))
        except ValueError as err:
            raise invalid("malformed", f"action {i} {shown(text)}: {err}") from None
    for i, action in enumerate(actions[:-1], 1):
        if action.kind is ActionKind.SCOUT_DRAW:
            raise invalid("scout-step", f"action {i}: send each scout-draw in its own request "
                          "(each draw shows a card before the next choice)")
    return actions


def seat_name(seat: int) -> str:
    return ("first", "second")[seat] + " seat"


class Matches:
    """Match operations over one Storage; keeps a cache of parsed states."""

    def __init__(self, storage: Storage, lobby_ttl_s: int = 15 * 60,
                 ai_join_ms: int = 60_000) -> None:
        self.storage = storage
        self.cache = StateCache()
        self.lobby_ttl_s = lobby_ttl_s  # an OPEN match nobody joined expires after this
        self.ai_join_ms = ai_join_ms  # an AI match no hosted AI took by then is cancelled
        self._wakes: set[asyncio.Task[None]] = set()  # wakes running on (`_write`)

    # -- reading --------------------------------------------------------------------

    async def read(self, match_id: str) -> Match:
        """The match, after ending it if its deadline has passed (the running clock, or
        the hosted AI's time to take its seat)."""
        known = self.cache.latest(match_id)
        record = await self.storage.matches.load(match_id, known.record if known else None)
        if record is None:
            raise not_found(match_id)
        if known is not None and record is known.record:  # still the version we know
            return await self.checked(known)
        return await self.checked(record)

    async def checked(self, found: MatchRecord | Match) -> Match:
        """A match just loaded, after ending it if its deadline has passed."""
        match = found if isinstance(found, Match) else parse_match(found, self.cache)
        for _ in range(5):
            if match.status == Status.WAITING and self._past_deadline(match):
                await self._write(match, self._cancelled(match, "cancelled: no hosted AI "
                                  f"took its seat within {self.ai_join_ms / 1000:g} s"), None, b"")
            elif self.clock_expired(match):
                await self._time_out(match)
            else:
                return match
            fresh = await self.storage.matches.load(match.match_id)
            if fresh is None:
                raise not_found(match.match_id)
            match = parse_match(fresh, self.cache)
        return match

    @staticmethod
    def clock_expired(match: Match, at_ms: int | None = None) -> bool:
        return match.status == Status.PLAYING and Matches._past_deadline(match, at_ms)

    @staticmethod
    def _past_deadline(match: Match, at_ms: int | None = None) -> bool:
        """Whether the match's deadline (0: none) has passed: a playing match's running
        clock, or the time a waiting AI match gives the hosted AI to take its seat."""
        deadline = match.record.deadline_ms
        return deadline > 0 and (at_ms or now_ms()) >= deadline

    # -- playing --------------------------------------------------------------------

    async def submit(self, match_id: str, seat: int, expected_version: int, action_id: str,
                     actions: list[Action], answer: Answer[A]) -> A:
        """Apply the seat's actions all-or-nothing (up to the game's end: `_play`); a repeated
        action id replays its answer.

        Two steps: the quick one, then (unless it answered) the checked one. Quick: when
        this process knows the match at `expected_version` (it wrote or read it lately),
        the actions are applied to that and committed without reading the match first;
        the commit checks the version (and the action id) in Redis, so this is exactly
        the checked step minus one round trip. Anything but a clean commit or a stored
        answer (a stale version, a rejected action, a clock that has run out...) leaves
        it to the checked step, which reads the match and answers precisely.
        """
        replay = Replay.of("a", seat, action_id, [format_action(a) for a in actions])
        quick = await self._submit_known(match_id, seat, expected_version, replay, actions,
                                         answer)
        if quick is not None:
            return quick
        return await self._submitchecked(match_id, seat, expected_version, replay, actions,
                                          answer)

    async def _submit_known(self, match_id: str, seat: int, expected_version: int,
                            replay: Replay, actions: list[Action],
                            answer: Answer[A]) -> A | None:
        """The quick step: the answer, or None to take the checked step."""
        known = self.cache.match(match_id, expected_version)
        if known is None or known.status != Status.PLAYING or self.clock_expired(known):
            return None
        try:
            outcome = self._play(known, seat, actions)
        except Refusal:
            return None  # the checked step reads the match and refuses precisely
        reply = answer.build(outcome, seat)
        result = await self._write(known, outcome, replay.key, replay.seal(answer.encode(reply)))
        if result.status is CommitStatus.OK:
            return reply
        if result.status is CommitStatus.DUPLICATE:
            return answer.decode(replay.open(result.response or b""))
        return None

    async def _submitchecked(self, match_id: str, seat: int, expected_version: int,
                              replay: Replay, actions: list[Action], answer: Answer[A]) -> A:
        """The checked step: read the match (or the stored answer), check, apply, commit."""
        record, prior = await self.storage.matches.load_for_action(match_id, replay.key)
        if prior is not None:
            return answer.decode(replay.open(prior))
        if record is None:
            raise not_found(match_id)
        match = await self.checked(record)
        require_playing(match)
        if expected_version != match.version:
            raise Refusal(Kind.CONFLICT, "stale-version",
                          f"the match is at version {match.version}, not {expected_version}: "
                          "refetch the view")
        outcome = self._play(match, seat, actions)
        reply = answer.build(outcome, seat)
        result = await self._write(match, outcome, replay.key, replay.seal(answer.encode(reply)))
        return self._answered(match, result, reply, answer, replay)

    def _play(self, match: Match, seat: int, actions: list[Action]) -> Outcome:
        """The seat's actions applied to a clone of the match's state. The game's end
        ends the request: the rest of the turn after the action that ended it (a winning
        claim, or the play whose auto-claims won) is not applied, as a whole turn sent in
        one request (`play, claim, draw`) asks; the answer's events end with the game's.
        Anything but the turn's finishing actions after the end is refused (game-over)."""
        state = match.state.clone()
        events: list[Event] = []
        auto = match.meta.auto_claim
        for i, action in enumerate(actions, 1):
            if state.is_over:
                _rest_of_the_turn(actions, i)
                break
            if state.current_player != seat:
                raise Refusal(Kind.FORBIDDEN, "not-your-turn",
                              f"action {i}: it is the {seat_name(state.current_player)}'s turn")
            if action.kind is not ActionKind.CLAIM:
                events += _auto_claims(state, auto)
                if state.is_over:  # the auto-claims after the last action won
                    _rest_of_the_turn(actions, i)
                    break
            try:
                events.append(state.apply(action))
            except RuleError as err:
                raise from_rule_error(err, f"action {i} {shown(format_action(action))}") from None
        events += _auto_claims(state, auto)
        return self._outcome(match, state, events, seat)

    async def resign(self, match_id: str, seat: int, action_id: str, answer: Answer[A],
                     cancel_only: bool = False) -> A:
        """End the match: the seat resigning loses the game and the series. A match still
        waiting for its other seat is cancelled instead (its creator, the only seat with
        a token, withdraws it): no winner, and it holds none of the creator's places.
        `cancel_only`: a match that has begun is left alone (the seat was taken while
        its creator asked to cancel)."""
        replay = Replay.of("r", seat, action_id, ["cancel" if cancel_only else "resign"])
        for _ in range(5):
            record, prior = await self.storage.matches.load_for_action(match_id, replay.key)
            if prior is not None:
                return answer.decode(replay.open(prior))
            if record is None:
                raise not_found(match_id)
            match = await self.checked(record)
            if cancel_only and match.status == Status.PLAYING:
                raise precondition("joined", "the other seat was taken: the game has begun "
                                   "(Resign without cancel_only gives it up)")
            if match.status == Status.WAITING:
                outcome = self._cancelled(match, f"cancelled by the {seat_name(seat)} "
                                          "before anyone took the other seat", seat)
            else:
                require_playing(match)
                state = match.state.clone()
                state.resign(seat)
                outcome = self._outcome(match, state, [], seat, end="resignation", loser=seat)
            reply = answer.build(outcome, seat)
            result = await self._write(match, outcome, replay.key,
                                       replay.seal(answer.encode(reply)))
            if result.status is not CommitStatus.CONFLICT:
                return self._answered(match, result, reply, answer, replay)
        raise Refusal(Kind.CONFLICT, "stale-version", "the match keeps changing")

    async def _time_out(self, match: Match) -> None:
        """The running clock ran out: its seat loses the match (committed once, by any
        replica). A write that lost the race (another replica, or a read of this one, timed
        it out first) is no error: the caller reads the match again."""
        loser = ClockState.parse(match.fields).seat
        state = match.state.clone()
        state.resign(loser)
        outcome = self._outcome(match, state, [], None, end="timeout", loser=loser)
        await self._write(match, outcome, None, b"")

    def _outcome(self, match: Match, state: GameState, events: list[Event], seat: int | None,
                 end: str = "", loser: int | None = None) -> Outcome:
        """Everything the commit writes, and the match as it will then read."""
        meta, now = match.meta, now_ms()
        version = match.version + 1
        stored = [stored_event("action", version, now, e.seat, e) for e in events]
        game, score, winner, status = match.game, match.score, match.winner, Status.PLAYING
        clock = ClockState.parse(match.fields)
        if end == "resignation":
            stored.append(stored_event("resigned", version, now, loser,
                                             text=f"{seat_name(loser or 0)} resigned"))
        elif end == "timeout":
            stored.append(stored_event("timeout", version, now, loser,
                                             text=f"{seat_name(loser or 0)} ran out of time"))
        if state.is_over:
            points = series_points(state)
            score = (score[0] + points[0], score[1] + points[1])
            last = end != "" or game >= meta.series_games
            if last:
                status = Status.FINISHED
                if loser is not None:
                    winner = 1 - loser
                elif meta.series_games == 1:
                    winner = state.winner
                else:
                    winner = None if score[0] == score[1] else int(score[1] > score[0])
            who = "drawn" if state.winner is None else f"won by the {seat_name(state.winner)}"
            told = f"game {game} {who}"
            if meta.series_games > 1:  # a single game's points only restate who won it
                told += (f"; series points: the {seat_name(0)} {score[0]}, "
                         f"the {seat_name(1)} {score[1]}")
            stored.append(stored_event("game_over", version, now, text=told, final=last))
            if not last:
                game += 1
                state = deal(meta, game, next_first_player(state))
                clock = start_clock(meta)  # a per-game budget is for one game, not the series
                stored.append(stored_event("game_started", version, now,
                                                 text=f"game {game} started"))
        clock = advance(meta, clock, state, status == Status.PLAYING, now)
        fields = {**match.fields, **progress_fields(game, score, winner, end), **clock.fields()}
        old = match.record
        record = MatchRecord(
            match_id=old.match_id, state=dump_position(state), version=version,
            last_event=old.last_event + len(stored), status=status,
            deadline_ms=clock.deadline_ms(meta), created_ms=old.created_ms, updated_ms=now,
            fields=fields,
        )
        new = Match(record, meta, state, game, score, winner, end, fields)
        return Outcome(state, stored, new)

    @staticmethod
    def _cancelled(match: Match, why: str, seat: int | None = None) -> Outcome:
        """A waiting match ended before its first game (by `seat`, or by the engine): no
        winner, nothing played."""
        now = now_ms()
        old = match.record
        version = old.version + 1
        events = [stored_event(CANCELLED, version, now, seat, text=why, final=True)]
        fields = {**match.fields, **progress_fields(match.game, match.score, None, CANCELLED)}
        record = MatchRecord(
            match_id=old.match_id, state=old.state, version=version,
            last_event=old.last_event + 1, status=Status.FINISHED, deadline_ms=0,
            created_ms=old.created_ms, updated_ms=now, fields=fields,
        )
        new = Match(record, match.meta, match.state, match.game, match.score, None, CANCELLED,
                    fields)
        return Outcome(match.state, events, new)

    async def _write(self, match: Match, outcome: Outcome, key: str | None,
                     response: bytes) -> CommitResult:
        """Commit the outcome if the match is still at `match`'s version, with `response`
        stored under the action `key`; once written, remember the match as a read would
        now find it."""
        new = outcome.match
        changed = {k: v for k, v in new.fields.items() if match.fields.get(k) != v}
        result = await self.storage.matches.commit(
            match.match_id, expected_version=match.version, state=new.record.state,
            events=outcome.events, action_key=key, response=response,
            status=new.status if new.status != match.status else None,
            deadline_ms=new.record.deadline_ms, fields=changed,
            finished=new.status == Status.FINISHED, updated_ms=new.record.updated_ms,
            # Cancelled before its first game, it holds no record worth the retention.
            finished_ttl_s=self.lobby_ttl_s if new.end == CANCELLED else None,
            id_kept_s=id_kept_s(match.fields),
        )
        if result.status is CommitStatus.OK:
            self.cache.remember(new)
            if _turn_passed_to_ai(match, new):
                # Not the caller's to cancel: a client that gives up on its call as soon
                # as the move is written must not leave the AI asleep (eighth audit).
                wake = asyncio.create_task(self._wake_ai(match.match_id))
                self._wakes.add(wake)
                wake.add_done_callback(self._wakes.discard)
                await asyncio.shield(wake)
        return result

    async def wake_parked(self, count: int) -> None:
        """The backstop of the wake at each move: look at the `count` parked matches
        looked at least recently, wake those whose AI is to act (a wake its engine never
        finished: it died mid-call) and forget those that are over."""
        ids = await self.storage.ai.parked_to_look_at(count)
        for match_id, record in zip(ids, await self.storage.matches.load_many(ids), strict=True):
            if record is None or record.status == Status.FINISHED:
                await self.storage.ai.unpark(match_id)
            elif record.status == Status.PLAYING:
                match = parse_match(record, self.cache)
                if match.state.current_player == match.meta.ai_seat:
                    await self._wake_ai(match_id)

    async def _wake_ai(self, match_id: str) -> None:
        """Ask a hosted AI again for a match a worker parked while its human thought.

        The move is committed whatever happens here, so a store that fails is asked
        again for about 1.5 s (the request once taken is kept, and parked again if it
        cannot be sent); after that the failure is logged, and the sweeper's round of
        the parked matches (`wake_parked`) wakes the AI later."""
        parked: dict[str, str] | None = None
        for retry_s in _WAKE_RETRIES_S:
            try:
                parked = parked or await self.storage.ai.unpark(match_id)
                if parked is not None:
                    await self.storage.ai.request(match_id, int(parked["seat"]),
                                                  int(parked["level"]), parked.get("owner", ""))
                return
            except STORE_ERRORS:
                if retry_s is None:
                    log.exception("match %s: the parked hosted AI could not be woken", match_id)
                    if parked is not None:
                        with contextlib.suppress(*STORE_ERRORS):
                            await self.storage.ai.park(parked)
                    return
                await asyncio.sleep(retry_s)

    def _answered(self, match: Match, result: CommitResult, reply: A, answer: Answer[A],
                  replay: Replay) -> A:
        """The answer after a checked write: the stored one for a repeated action id,
        else `reply` once written."""
        if result.status is CommitStatus.DUPLICATE:
            return answer.decode(replay.open(result.response or b""))
        self._check_written(match, result)
        return reply

    @staticmethod
    def _check_written(match: Match, result: CommitResult) -> None:
        """Refuse a write that lost a race, found the match gone, or came under an
        action id the seat had spent (its answer replaced by a later request's)."""
        if result.status is CommitStatus.SPENT:
            raise precondition("action-id-used", "this action id was answered before, "
                               "and the seat has sent later requests since: fetch the "
                               "view to see where the match is, and give a new request "
                               "a new id")
        if result.status is CommitStatus.CONFLICT:
            raise Refusal(Kind.CONFLICT, "stale-version",
                          f"the match changed (now version {result.version}): refetch the view")
        if result.status is CommitStatus.NOT_FOUND:
            raise not_found(match.match_id)


def _turn_passed_to_ai(before: Match, after: Match) -> bool:
    """Whether a commit made the hosted AI's seat the one to act (its human moved)."""
    seat = after.meta.ai_seat
    return (after.meta.opponent == Opponent.AI and after.status == Status.PLAYING
            and after.state.current_player == seat
            and not (before.status == Status.PLAYING and before.state.current_player == seat))


def _rest_of_the_turn(actions: list[Action], first: int) -> None:
    """Refuse the request (game-over) unless its actions from number `first` on, after
    the game's end, are the rest of a turn (claims, a draw, `end`), which is let go."""
    for i, action in enumerate(actions[first - 1:], first):
        if action.kind not in TURN_ENDS:
            raise precondition("game-over", f"action {i}: the game ended before it")


def _auto_claims(state: GameState, auto: tuple[bool, bool]) -> list[Event]:
    """Claim every flag the seat to act can prove now, if it chose auto-claim.

    Applied before each non-claim action and at the end of every commit, so a
    seat's view never offers a play at a flag that will be claimed under it.
    Only the claims are listed, never the seat's other actions: those depend on its
    hidden hand, and the time to list them would tell the other seat of it (seventh
    audit: 2.5 to 22 µs, with and without Redeploy or Traitor in hand).
    """
    events = []
    while not state.is_over and auto[state.current_player]:
        claims = state.claim_actions()
        if not claims:
            break
        events.append(state.apply_unchecked(claims[0]))
    return events


def require_playing(match: Match) -> None:
    """Refuse what only a match in play allows, saying why it is not in play."""
    if match.status == Status.WAITING:
        raise precondition("waiting", "waiting for the other seat to be taken")
    if match.status == Status.FINISHED:
        raise precondition("game-over", "the match is over")
