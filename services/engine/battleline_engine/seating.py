"""The lobby's domain: create a match, take its open seat, list the open ones.

A match is made waiting for its other seat (OPEN: a person, by the lobby or an
invite code; AI: the hosted AI, asked through the request stream) or playing
(LOCAL). Creates and joins may be sent again after a lost answer: a caller that
chose its token's secret is answered the seat it got, never a second match or
seat. Each creator holds a few unjoined or unfinished matches at most. Domain
code, as `matches`: no grpc and no protobuf; refusals are `Refusal`s.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

from battleline_rules import RULESETS, dump_position

from .clocks import ClockState, advance, start_clock
from .errors import Kind, Refusal, not_found, precondition
from .matches import Matches, seat_name
from .model import (
    CREATE_REQUEST,
    Match,
    Meta,
    Opponent,
    Status,
    deal,
    id_kept_s,
    parse_match,
    progress_fields,
    stored_event,
)
from .storage import (
    AI_PLACE_TTL_S,
    STORE_UNAVAILABLE,
    CommitStatus,
    hash_token,
    log_failure,
    new_match_id,
    new_seat_token,
    now_ms,
    other_seat_secret,
    secret_match_id,
)

AI_ASKED = "ai_asked"  # field: the hosted AI was asked to join (once, whoever gets there)
# A create stores its match within half of this after holding its place (taken again,
# its time is renewed), or gives up: a place whose match is missing for longer is a
# leftover (a create that failed, or whose engine died, in between). Engines' clocks are
# taken to agree within seconds, as for match deadlines.
STORING_MS = 60_000
JOIN_ATTEMPTS = 3  # a join that meets a change (usually a rival join) reads the match again
log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Created:
    """A new match and the credentials only its creator ever sees."""

    match: Match
    seat: int
    token: str
    other_token: str = ""  # LOCAL: the second seat's token
    invite: str = ""


# Invite codes are read aloud and typed: no look-alike characters, never a leading '-'.
INVITE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"


def new_invite_code(length: int = 10) -> str:
    """A random invite code (50 bits with the default length)."""
    return "".join(secrets.choice(INVITE_ALPHABET) for _ in range(length))


class Seating:
    """Creating and joining matches, over the `Matches` that reads and writes them."""

    def __init__(self, matches: Matches, max_scan: int = 200) -> None:
        self._matches = matches
        self.storage = matches.storage
        self.max_scan = max_scan  # lobby entries one list_open call looks at, at most

    async def create(self, meta: Meta, creator: int, client: str = "",
                     ai_cap: int = 0, open_cap: int = 0, secret: str = "",
                     request_digest: str = "") -> Created:
        """Store a new match; LOCAL starts at once, OPEN and AI wait for the other seat.
        An AI match counts against `client`'s `ai_cap` unfinished AI matches, an OPEN
        one against its `open_cap` unjoined ones; an OPEN match nobody joins expires
        after `Matches.lobby_ttl_s`.

        A creator that chose its token's `secret` names the match by it: the same
        create sent again (`request_digest`, a digest of the request, matches the one
        stored) answers the match it made, where a lost answer would otherwise leave a
        match nobody can play."""
        match_id = secret_match_id(secret) if secret else new_match_id()
        cap = ai_cap if meta.opponent == Opponent.AI else open_cap
        if secret:
            made = await self._stored(match_id)
            if made is not None:
                return await self._answered_again(made, secret, request_digest, client, cap)
        other = 1 - creator
        token = new_seat_token(match_id, secret)
        seats = {creator: hash_token(token)}
        other_token = ""
        if meta.opponent == Opponent.LOCAL:
            other_token = new_seat_token(match_id, other_seat_secret(secret))
            seats[other] = hash_token(other_token)
        else:
            meta = replace(meta, open_seat=other)
            if meta.opponent == Opponent.OPEN:
                meta = replace(meta, invite=new_invite_code())
            else:
                meta = replace(meta, ai_seat=other)
        status = Status.PLAYING if meta.opponent == Opponent.LOCAL else Status.WAITING
        state = deal(meta, 1, 0)
        now = now_ms()
        events = [stored_event("created", 1, now, creator,
                                     text=f"created: {meta.ruleset}, {seat_name(creator)}")]
        clock = start_clock(meta)
        # A match waits for a person up to the lobby's TTL, for the hosted AI (which joins
        # at once unless every worker is full or down) only until its deadline.
        deadline = now + self._matches.ai_join_ms if meta.opponent == Opponent.AI else 0
        if status == Status.PLAYING:
            events.append(stored_event("game_started", 1, now, text="game 1 started"))
            clock = advance(meta, clock, state, True, now)
            deadline = clock.deadline_ms(meta)
        fields = {"meta": meta.to_json(), **progress_fields(1, (0, 0), None, ""),
                  **clock.fields()}
        if request_digest:
            fields[CREATE_REQUEST] = request_digest
        try:
            if meta.opponent != Opponent.LOCAL:
                await self._hold_place(meta.opponent, client, match_id, cap)
            # Within half of STORING_MS: after that another create may let its place go.
            async with asyncio.timeout(STORING_MS / 2000):
                result = await self.storage.matches.create(
                    match_id, dump_position(state), status=status, seats=seats,
                    fields=fields, events=events, deadline_ms=deadline,
                    ttl_s=self._matches.lobby_ttl_s if meta.opponent == Opponent.OPEN
                    else None, id_kept_s=id_kept_s(fields))
            if result.status is CommitStatus.OK:
                await self._open_to_others(match_id, meta, client, now)
                match = await self._matches.read(match_id)
        except BaseException as err:
            if isinstance(err, Refusal) and err.kind is Kind.EXHAUSTED:
                raise  # refused a place: nothing was held or stored
            if not secret:
                # Its creator hears of a failure and never gets its token: a match left
                # behind would hold one of its places with no way to cancel it (eighteenth
                # audit: a Redis that filled up between the match and its invite).
                await self._withdraw(match_id, meta, client)
            # Under a secret nothing is undone: the same create sent again (perhaps
            # answered already, this one being slow) finishes the match, which may be
            # listed or have the AI asked already, and the place is that match's whichever
            # call took it (twenty-third audit). A place whose match never came is let go
            # at the cap once a minute has passed (`_hold_place`); one whose match was
            # stored lasts as long as the match waits.
            if isinstance(err, TimeoutError):  # the store is stalled: the client retries
                raise Refusal(Kind.UNAVAILABLE, "storage-unavailable",
                              "the match store did not answer in time: retry") from None
            raise
        if result.status is not CommitStatus.OK:
            # The same create sent twice at once, the other one first; a secret's id whose
            # match is gone (USED); or a random 101-bit id collided (practically never).
            # The place held for this one is let go unless it is that match's own (a
            # match of the same kind).
            made = await self._stored(match_id) if secret else None
            if meta.opponent != Opponent.LOCAL and (
                    made is None or made.meta.opponent != meta.opponent):
                await self.storage.lobby.free_places(meta.opponent, client, match_id)
            if result.status is CommitStatus.USED:
                raise precondition("seat-secret-used", "this seat_secret made a match that "
                                   "has ended or expired since: use a fresh secret for every "
                                   "new match")
            if made is None:  # collided, or the match expired since
                raise Refusal(Kind.CONFLICT, "retry", "could not allocate a match id")
            return await self._answered_again(made, secret, request_digest, client, cap)
        return Created(match, creator, token, other_token, meta.invite)

    async def _open_to_others(self, match_id: str, meta: Meta, client: str,
                              created_ms: int) -> None:
        """What makes a new match joinable: its invite and lobby entry, or the hosted AI
        asked to join. Each step may run twice: a create sent again does them all again
        for a match still waiting, finishing what the first left undone."""
        if meta.invite:
            await self.storage.lobby.set_invite(meta.invite, match_id, self._matches.lobby_ttl_s)
            if not meta.private:
                await self.storage.lobby.add_open(match_id, created_ms, meta.ruleset,
                                                  self._matches.lobby_ttl_s)
        # Asked once: two workers must not take one seat.
        if (meta.opponent == Opponent.AI
                and await self.storage.matches.claim_flag(match_id, AI_ASKED)):
            try:
                await self.storage.ai.request(match_id, meta.ai_seat, meta.ai_level,
                                              owner=client)
            except BaseException:
                await self.storage.matches.drop_flag(match_id, AI_ASKED)
                raise

    async def _stored(self, match_id: str) -> Match | None:
        """The match a create under a secret made already (None: none, or it expired)."""
        record = await self.storage.matches.load(match_id)
        return None if record is None else await self._matches.checked(record)

    async def _answered_again(self, match: Match, secret: str, request_digest: str,
                              client: str, cap: int) -> Created:
        """The answer a create under `secret` got when it made `match`: the same seat and
        tokens, its creation finished first if the first create did not (its answer or a
        store reply lost on the way). The same secret with other settings is refused: a
        secret names one match."""
        match_id = match.match_id
        token = new_seat_token(match_id, secret)
        seat = await self.storage.matches.seat_by_hash(match_id, hash_token(token))
        if seat is None or match.fields.get(CREATE_REQUEST) != request_digest:
            raise precondition("seat-secret-used", "this seat_secret created a match with "
                               "other settings: use a fresh secret for every new match")
        if match.status == Status.WAITING:  # what the first create may have left undone
            await self._hold_place(match.meta.opponent, client, match_id, cap)
            await self._open_to_others(match_id, match.meta, client, match.record.created_ms)
        other_token = (new_seat_token(match_id, other_seat_secret(secret))
                       if match.meta.opponent == Opponent.LOCAL else "")  # as `create` made it
        return Created(match, seat, token, other_token, match.meta.invite)

    async def _withdraw(self, match_id: str, meta: Meta, client: str) -> None:
        """Undo a creation that could not be completed, as far as the store lets us (what
        it refuses expires by itself)."""
        lobby = self.storage.lobby
        steps: list[Callable[[], Awaitable[None]]] = [
            lambda: self.storage.matches.discard(match_id),
            lambda: lobby.remove_open([match_id], [meta.ruleset]),
            lambda: lobby.free_places(meta.opponent, client, match_id)]
        if meta.invite:
            steps.append(lambda: lobby.delete_invite(meta.invite))
        for step in steps:
            with contextlib.suppress(Exception):
                await step()

    async def _hold_place(self, kind: Opponent, client: str, match_id: str, cap: int) -> None:
        """Count a new match against its creator, or refuse once the creator holds `cap`
        of its kind. Why: an AI match holds a place in an AI worker until it ends, an
        OPEN one a lobby entry until joined. Matches that let go of their place are
        dropped from the count first; one whose match is missing only once `STORING_MS`
        has passed since it was taken (before, its create may still be on its way); the
        check and the count are one script, so concurrent creates cannot pass the cap
        together."""
        held = await self.storage.lobby.places_of(kind, client)
        if len(held) >= cap:
            records = await self.storage.matches.load_many(held)
            done = [m for m, r in zip(held, records, strict=True)
                    if r is not None and (r.status == Status.FINISHED or (
                        kind == Opponent.OPEN and r.status != Status.WAITING))]
            await self.storage.lobby.free_places(kind, client, *done)
            missing = [m for m, r in zip(held, records, strict=True) if r is None]
            await self.storage.lobby.free_stale_places(kind, client, now_ms() - STORING_MS,
                                                       *missing)
        ttl_s = self._matches.lobby_ttl_s if kind == Opponent.OPEN else AI_PLACE_TTL_S
        if not await self.storage.lobby.hold_place(kind, client, match_id, cap, ttl_s):
            what = "unjoined open matches" if kind == Opponent.OPEN else \
                "unfinished matches against the hosted AI"
            step = ("wait for someone to join one, or cancel one (Resign)"
                    if kind == Opponent.OPEN else
                    "finish or resign one (one left alone ends when its clock runs out)")
            raise Refusal(Kind.EXHAUSTED, f"{kind}-matches-per-client",
                          f"at most {cap} {what} per client: {step} first")

    async def resolve(self, match_id: str, invite: str) -> str:
        """The match id of a JoinMatch target."""
        if invite:
            found = await self.storage.lobby.resolve_invite(invite.strip().upper())
            if found is None:
                raise Refusal(Kind.NOT_FOUND, "invite-not-found",
                              "no match has this invite code")
            return found
        return match_id

    async def join(self, match_id: str, name: str, auto_claim: bool, ai_key_hash: str = "",
                   by_invite: bool = False, secret: str = "") -> tuple[Match, int, str]:
        """Take the open seat: returns the match, the seat and its token. A private
        match is joined by its invite code only: its id is given to spectators too.

        The seat reserved for the hosted AI is taken only by a caller that presented
        the AI's key (`ai_key_hash`, its hash, given then). No token is issued for it:
        the key's hash is the seat's token hash, and joining again answers the same
        seat, so a worker taking a match over (or a restarted one) needs nothing stored.
        A joiner that chose its token's `secret` is answered the same way: its join sent
        again after a lost answer (the commit made, the answer not delivered) gets its
        seat, where it would get match-full. A join that loses a race to another is told
        what it lost to (`match-full`, `cancelled`), not to try again.
        """
        for _ in range(JOIN_ATTEMPTS):
            joined = await self._try_join(match_id, name, auto_claim, ai_key_hash, by_invite,
                                          secret)
            if joined is not None:
                return joined
        raise Refusal(Kind.CONFLICT, "stale-version", "the match changed while joining: try again")

    async def _try_join(self, match_id: str, name: str, auto_claim: bool, ai_key_hash: str,
                        by_invite: bool, secret: str) -> tuple[Match, int, str] | None:
        """One attempt of `join`; None when the match changed under it."""
        match = await self._matches.read(match_id)
        meta = match.meta
        if meta.private and not by_invite:
            raise Refusal(Kind.FORBIDDEN, "invite-required",
                          "this match is private: join it with its invite code")
        if meta.opponent == Opponent.AI and not ai_key_hash:
            raise Refusal(Kind.FORBIDDEN, "seat-reserved",
                          "this seat is reserved for the hosted AI")
        if ai_key_hash and meta.opponent != Opponent.AI:
            raise Refusal(Kind.FORBIDDEN, "not-ai-seat",
                          "the AI key joins only matches against the hosted AI")
        seat = meta.open_seat
        if match.status == Status.FINISHED and seat >= 0:
            raise precondition("cancelled", "the match was cancelled before anyone took "
                               "the other seat")
        if ai_key_hash:
            token, token_hash = "", ai_key_hash
        else:
            token = new_seat_token(match_id, secret)
            token_hash = hash_token(token)
        if match.status != Status.WAITING or seat < 0:
            return await self._joined_again(match_id, meta, ai_key_hash, secret, token)
        if ai_key_hash:
            name = name or f"AI level {meta.ai_level}"
        new_meta = meta.with_seat(seat, name, auto_claim)
        now = now_ms()
        version = match.version + 1
        state = deal(new_meta, 1, 0)  # not the deal made at creation: nobody chose this one
        clock = advance(new_meta, ClockState.parse(match.fields), state, True, now)
        events = [stored_event("joined", version, now, seat, text=f"{seat_name(seat)} "
                                     f"joined: {name}" if name else f"{seat_name(seat)} joined"),
                  stored_event("game_started", version, now, text="game 1 started")]
        result = await self.storage.matches.commit(
            match_id, expected_version=match.version, state=dump_position(state), events=events,
            status=Status.PLAYING, deadline_ms=clock.deadline_ms(new_meta),
            fields={"meta": new_meta.to_json(), **clock.fields()},
            claim_seat=(seat, token_hash), id_kept_s=id_kept_s(match.fields),
        )
        if result.status is CommitStatus.SEAT_TAKEN:
            return await self._joined_again(match_id, meta, ai_key_hash, secret, token)
        if result.status is CommitStatus.CONFLICT:
            return None
        if result.status is CommitStatus.NOT_FOUND:
            raise not_found(match_id)
        # The seat is taken: tidying the lobby index must not turn the join into an
        # error now (the joiner would never learn its token). It is a hint only
        # (list_open drops matches no longer waiting), so a store hiccup here is logged
        # and left. The invite stays until it expires: a join by invite code sent again
        # with its secret finds its seat through it (a stranger's finds no open seat).
        try:
            await self.storage.lobby.remove_open([match_id], [meta.ruleset])
        except STORE_UNAVAILABLE as err:  # one line: a store (node) away for a moment
            log_failure(log, f"join of {match_id}: lobby index not tidied", err)
        return await self._matches.read(match_id), seat, token

    async def _joined_again(self, match_id: str, meta: Meta, ai_key_hash: str, secret: str,
                            token: str) -> tuple[Match, int, str]:
        """A taken seat: the seat this caller took already, if it presents what took it
        (the AI's key, for the AI's seat: a worker taking the match over; a joiner's
        secret: its join sent again), else FAILED_PRECONDITION match-full."""
        presented = ai_key_hash or (hash_token(token) if secret else "")
        seat = await self.storage.matches.seat_by_hash(match_id, presented) \
            if presented else None
        if seat is not None and (not ai_key_hash or seat == meta.ai_seat):
            return await self._matches.read(match_id), seat, token
        raise precondition("match-full", "the match has no open seat")

    async def list_open(self, ruleset: str, limit: int, after: tuple[int, str] | None,
                        ) -> tuple[list[Match], tuple[int, str] | None]:
        """Open public matches (of `ruleset`, "": any), newest first, after the cursor
        `(created ms, match id)` of the previous page; returns them and the next cursor
        (None: last page).

        Each ruleset has its own index, so a filter reads only its own entries. Entries
        found joined, finished or gone are dropped on the way; at most `max_scan` are
        looked at per call, after which the page ends early with a cursor, so one call
        never costs more than that however stale the index. The index lists equal times
        by descending id, so the id breaks ties and matches created in the same
        millisecond are neither skipped nor repeated.
        """
        found: list[Match] = []
        scanned = 0
        while len(found) < limit:
            want = min(limit - len(found), self.max_scan - scanned)
            if want <= 0:
                return found, after  # the bound: the caller goes on from the cursor
            page = await self.storage.lobby.list_open(want, after, ruleset)
            scanned += len(page)
            records = await self.storage.matches.load_many(m for m, _ in page)
            gone = []
            for (match_id, created), record in zip(page, records, strict=True):
                after = (created, match_id)
                if record is None or record.status != Status.WAITING:
                    gone.append(match_id)
                else:
                    found.append(parse_match(record, self._matches.cache))
            await self.storage.lobby.remove_open(gone, RULESETS)
            if len(page) < want:
                return found, None
        more = await self.storage.lobby.list_open(1, after, ruleset)
        return found, after if more else None

