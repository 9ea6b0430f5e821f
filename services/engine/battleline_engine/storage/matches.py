"""The match store: each match's hash, event stream, idempotency record and seats.

Everything stored is opaque here: the state is the rules core's position text,
events and idempotency responses are whatever the caller encodes. What this
part guarantees is the atomic step the design needs: one Lua script checks the
expected version and then writes the new state, the numbered events, the
version bump, the idempotency record and the clock deadline together, or
writes nothing.

Keys of one match share the hash tag ``{match_id}`` so they live in one Redis
Cluster slot and every script stays in that slot::

    bl:{id}:m      hash    state, version, seq (last event number), status,
                           deadline (ms, 0 = none), created, updated, f:<name>
    bl:{id}:ev     stream  events with ids "<number>-0", numbered from 1
    bl:{id}:idem   hash    action key -> stored response; last:<who> -> action key;
                           spent:<who> -> digests of its earlier action keys, newest first
    bl:{id}:seats  hash    s<seat> -> token hash, t<token hash> -> seat
    bl:{id}:made   string  "1": the id has named a match (one made under its creator's
                           secret); outlives the match, so the id never names another

and one global index::

    bl:live        zset    unfinished matches by when they expire untouched (ms), for metrics

Every write that appends events also publishes the match id on the pub/sub channel
``bl:moved`` (events.py: each process's event reader reads only the streams announced
there; PUBLISH names no key, so the script stays in its slot on Redis Cluster).

A commit also keeps the clock index (clocks.py) and, when a match finishes, the
lobby (lobby.py) up to date, through those parts.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Final, cast

import redis

from .clocks import ClockIndex
from .connection import PREFIX, Connection, check_id, hash_token, now_ms, text, valid_id
from .lobby import Lobby

_LIVE: Final = f"{PREFIX}:live"
log = logging.getLogger(__name__)
MOVED_CHANNEL: Final = f"{PREFIX}:moved"  # pub/sub: ids of matches whose streams grew
_RESERVED: Final = frozenset(
    {"state", "version", "seq", "status", "deadline", "created", "updated"}
)
_EXISTS_PER_PIPELINE: Final = 1000

# The scripts' arguments: first named settings as name, value pairs (a setting left
# out is not changed), then 'fields', n, n (name, value) pairs for the match hash,
# then n events, each as n, n (name, value) pairs. KEYS: m, ev, idem, seats, made
# (create and commit), and the clock index when it is written in the same step (not on
# Redis Cluster).
_READ_ARGUMENTS: Final = """
local a, i = {}, 1
while ARGV[i] ~= 'fields' do a[ARGV[i]] = ARGV[i + 1]; i = i + 2 end
"""
# Writes the fields and appends the events after the stream's number `seq`;
# leaves `seq` at the last event's number, and announces the match on MOVED_CHANNEL
# (in the same atomic step, so no reader sees the announcement before the events).
_WRITE_FIELDS_AND_EVENTS: Final = """
local nf = tonumber(ARGV[i + 1]); i = i + 2
for _ = 1, nf do
  redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  i = i + 2
end
local ne = tonumber(ARGV[i]); i = i + 1
for _ = 1, ne do
  local np = tonumber(ARGV[i]); i = i + 1
  seq = seq + 1
  local args = {'XADD', KEYS[2]}
  if a.maxlen then
    args[#args + 1] = 'MAXLEN'
    args[#args + 1] = '~'
    args[#args + 1] = a.maxlen
  end
  args[#args + 1] = seq .. '-0'
  for _ = 1, np * 2 do
    args[#args + 1] = ARGV[i]
    i = i + 1
  end
  redis.call(unpack(args))
end
if ne > 0 then redis.call('PUBLISH', '""" + MOVED_CHANNEL + """', a.match) end
"""
_EXPIRE: Final = """
if a.ttl then
  for k = 1, 4 do redis.call('EXPIRE', KEYS[k], a.ttl) end
end
"""

# KEYS[5]: the mark that the match's id has named a match. ARGV kept (s): how long past
# the match's own TTL the id is kept from naming another (`id_kept_s`); set anew with
# every write, so the mark always outlives the match.
_KEEP_ID: Final = """
if a.kept then
  redis.call('SET', KEYS[5], '1', 'EX', (tonumber(a.ttl) or 0) + tonumber(a.kept))
end
"""

# How many of a sender's earlier action keys are refused (each kept as 16 hex digits of
# its SHA-1, whatever the id's length: 256 bytes a sender).
SPENT_IDS: Final = 16

# Settings: expect (version), action (key of the idempotency record) and response,
# state, status, finished (the match ends), deadline (ms; 0: no clock running), ttl (s),
# kept (s: the id's mark, `_KEEP_ID`),
# maxlen (of the stream), seat and token_hash (a seat to take), now (ms), match (its id,
# for the clock index).
# Returns {status, ...}.
_COMMIT_LUA: Final = _READ_ARGUMENTS + """
local m, idem, seats = KEYS[1], KEYS[3], KEYS[4]
local who = a.action and string.match(a.action, '^([^:]*:[^:]*):')
if a.action then
  local prior = redis.call('HGET', idem, a.action)
  if prior then return {'DUPLICATE', prior} end
  local spent = who and redis.call('HGET', idem, 'spent:' .. who)
  if spent then
    local digest = string.sub(redis.sha1hex(a.action), 1, 16)
    for k = 1, #spent, 16 do
      if string.sub(spent, k, k + 15) == digest then return {'SPENT'} end
    end
  end
end
local version = redis.call('HGET', m, 'version')
if not version then return {'NOT_FOUND'} end
if version ~= a.expect then return {'CONFLICT', version} end
if a.seat then
  -- A seat taken, or a token that names one already (a token's seat never changes: a
  -- creator joining with its own token's secret would move it to the other seat).
  if redis.call('HEXISTS', seats, 's' .. a.seat) == 1
      or redis.call('HEXISTS', seats, 't' .. a.token_hash) == 1 then
    return {'SEAT_TAKEN', version}
  end
  redis.call('HSET', seats, 's' .. a.seat, a.token_hash, 't' .. a.token_hash, a.seat)
end
local newv = tonumber(version) + 1
local seq = tonumber(redis.call('HGET', m, 'seq'))
""" + _WRITE_FIELDS_AND_EVENTS + """
redis.call('HSET', m, 'state', a.state, 'version', newv, 'seq', seq, 'updated', a.now)
if a.status then redis.call('HSET', m, 'status', a.status) end
if a.deadline then
  redis.call('HSET', m, 'deadline', a.deadline)
  if KEYS[6] then
    if a.deadline == '0' then
      redis.call('ZREM', KEYS[6], a.match)
    else
      redis.call('ZADD', KEYS[6], a.deadline, a.match)
    end
  end
end
if a.action then
  -- One answer per sender: an action key "<kind>:<who>:<id>" replaces the last one of
  -- its "<kind>:<who>" (a client retries its latest call), so the hash stays a few
  -- entries however long the match. The replaced key joins the sender's spent keys (a
  -- digest of each, newest first, SPENT_IDS of them), so that an earlier id sent again
  -- is refused, not applied a second time wherever its version still fits.
  if who then
    local before = redis.call('HGET', idem, 'last:' .. who)
    if before then
      redis.call('HDEL', idem, before)
      local spent = string.sub(redis.sha1hex(before), 1, 16)
        .. (redis.call('HGET', idem, 'spent:' .. who) or '')
      spent = string.sub(spent, 1, """ + str(SPENT_IDS * 16) + """)
      redis.call('HSET', idem, 'spent:' .. who, spent)
    end
    redis.call('HSET', idem, 'last:' .. who, a.action)
  end
  redis.call('HSET', idem, a.action, a.response)
end
if a.finished then  -- no request is applied any more: the spent keys guard nothing
  for _, key in ipairs(redis.call('HKEYS', idem)) do
    if string.sub(key, 1, 6) == 'spent:' then redis.call('HDEL', idem, key) end
  end
end
""" + _EXPIRE + _KEEP_ID + """
return {'OK', newv, seq}
"""

# Sets an `f:` field of a match still stored, if not set already: 1 if this call set it.
_CLAIM_FLAG_LUA: Final = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
return redis.call('HSETNX', KEYS[1], ARGV[1], '1')
"""

# Creates a match if the id is free (and not kept: USED). Settings: state, now, status,
# deadline, ttl, kept, match; then the seats to take as 'seats', n, n (seat, token hash)
# pairs, before the fields and events.
_CREATE_LUA: Final = """
local m, seats, made = KEYS[1], KEYS[4], KEYS[5]
if redis.call('EXISTS', m) == 1 then return {'EXISTS'} end
local a, i = {}, 1
while ARGV[i] ~= 'seats' do a[ARGV[i]] = ARGV[i + 1]; i = i + 2 end
if a.kept and redis.call('EXISTS', made) == 1 then return {'USED'} end
local ns = tonumber(ARGV[i + 1]); i = i + 2
for _ = 1, ns do
  redis.call('HSET', seats, 's' .. ARGV[i], ARGV[i + 1], 't' .. ARGV[i + 1], ARGV[i])
  i = i + 2
end
local seq = 0
""" + _WRITE_FIELDS_AND_EVENTS + """
redis.call('HSET', m, 'state', a.state, 'version', 1, 'seq', seq, 'status', a.status,
  'deadline', a.deadline, 'created', a.now, 'updated', a.now)
if KEYS[6] and a.deadline ~= '0' then redis.call('ZADD', KEYS[6], a.deadline, a.match) end
""" + _EXPIRE + _KEEP_ID + """
return {'OK', 1, seq}
"""

# KEYS: m, idem. ARGV: action key. The stored response if the key was seen, else the
# match hash (flat), in one command: the start of every action.
_LOAD_FOR_ACTION_LUA: Final = """
local prior = redis.call('HGET', KEYS[2], ARGV[1])
if prior then return {1, prior} end
return {0, redis.call('HGETALL', KEYS[1])}
"""


class CommitStatus(Enum):
    """Outcome of a write; callers map it to their own error codes."""

    OK = "OK"
    CONFLICT = "CONFLICT"  # expected version was stale: nothing written
    DUPLICATE = "DUPLICATE"  # action key seen before: nothing written, response is the original
    SPENT = "SPENT"  # action key answered before, its answer no longer kept: nothing written
    NOT_FOUND = "NOT_FOUND"  # no such match (never created, or expired)
    SEAT_TAKEN = "SEAT_TAKEN"  # the seat to claim is already held: nothing written
    EXISTS = "EXISTS"  # create_match: the id is in use
    USED = "USED"  # create_match: the id named a match once, which is gone: never again


@dataclass(frozen=True, slots=True)
class CommitResult:
    """What a write did. `version`/`last_event` are the match's after an OK write,
    the current version on CONFLICT/SEAT_TAKEN, and 0 otherwise."""

    status: CommitStatus
    version: int = 0
    last_event: int = 0
    response: bytes | None = None


@dataclass(frozen=True, slots=True)
class MatchRecord:
    """One read of a match hash."""

    match_id: str
    state: str
    version: int
    last_event: int
    status: str
    deadline_ms: int  # 0: no clock running
    created_ms: int
    updated_ms: int
    fields: dict[str, str] = field(default_factory=dict)  # the caller's f:<name> fields


def match_key(match_id: str, part: str) -> str:
    """Key of one part of a match; all parts share the `{match_id}` hash tag."""
    return f"{PREFIX}:{{{check_id(match_id)}}}:{part}"


def match_id_of_key(key: bytes | str) -> str:
    """The match id inside a key made by `match_key`."""
    return text(key).split("{", 1)[1].split("}", 1)[0]


def _expiry_ms(now: int, ttl_s: int) -> float:
    """When keys given `ttl_s` at `now` expire untouched (never, for 0)."""
    return now + ttl_s * 1000 if ttl_s else float("inf")


async def _after_the_match(what: str, write: Awaitable[object]) -> None:
    """An index write after the match's own: the match is written by then, so a failure
    (Redis full, or away for a moment) must not answer a create or a join as not done,
    whose caller would never learn its token; it is logged as `what`."""
    try:
        await write
    except redis.exceptions.RedisError as err:
        log.warning("%s: %s", what, err)


def _match_keys(match_id: str) -> list[str]:
    base = f"{PREFIX}:{{{check_id(match_id)}}}:"
    return [base + "m", base + "ev", base + "idem", base + "seats"]


def _fields_and_events(fields: Mapping[str, str],
                       events: Sequence[Mapping[str, str]]) -> list[str | bytes]:
    out: list[str | bytes] = ["fields", str(len(fields))]
    for key, value in fields.items():
        out += [f"f:{key}", value]
    out.append(str(len(events)))
    for event in events:
        if not event:
            raise ValueError("an event needs at least one field")
        out.append(str(len(event)))
        for key, value in event.items():
            out += [key, value]
    return out


class MatchStore:
    """Matches: create, read, commit; their seats and idempotency records.

    `retention_s`: how long a finished match (record, stream, tokens) is kept.
    `idle_ttl_s`: an unfinished match untouched this long expires (0: never).
    `stream_maxlen`: approximate cap on events kept per match (0: all).
    """

    def __init__(self, connection: Connection, clocks: ClockIndex, lobby: Lobby, *,
                 retention_s: int = 7 * 24 * 3600, idle_ttl_s: int = 30 * 24 * 3600,
                 stream_maxlen: int = 0) -> None:
        self._conn = connection
        self._clocks = clocks
        self._lobby = lobby
        self.retention_s = retention_s
        self.idle_ttl_s = idle_ttl_s
        self.stream_maxlen = stream_maxlen
        self._commit = connection.register(_COMMIT_LUA)
        self._create = connection.register(_CREATE_LUA)
        self._load_for_action = connection.register(_LOAD_FOR_ACTION_LUA)
        self._claim_flag = connection.register(_CLAIM_FLAG_LUA)

    def _clock_key(self, keys: list[str], deadline_ms: int | None) -> bool:
        """Add the clock index to a script's keys when the script can write it (not on
        Redis Cluster: another slot); whether it did."""
        if self._conn.cluster or deadline_ms is None:
            return False
        keys.append(self._clocks.key)
        return True

    async def create(
        self,
        match_id: str,
        state: str,
        *,
        status: str,
        seats: Mapping[int, str] = {},
        fields: Mapping[str, str] | None = None,
        events: Sequence[Mapping[str, str]] = (),
        deadline_ms: int = 0,
        ttl_s: int | None = None,
        id_kept_s: int = 0,
    ) -> CommitResult:
        """Store a new match at version 1 with its first events, seat token hashes and
        clock deadline (0: none); it expires after `ttl_s` untouched (default: the idle
        TTL; the next commit sets that again).

        `id_kept_s`: how long past the match's TTL its id is kept from naming another
        match (USED), set anew by every commit that passes it (`model.id_kept_s`)."""
        created = now_ms()
        ttl = self.idle_ttl_s if ttl_s is None else ttl_s
        args: list[str | bytes] = ["state", state, "now", str(created), "status", status,
                                   "deadline", str(deadline_ms), "match", match_id]
        if ttl:
            args += ["ttl", str(ttl)]
        if id_kept_s:
            args += ["kept", str(id_kept_s)]
        args += ["seats", str(len(seats))]
        for seat, token_hash in seats.items():
            args += [str(seat), token_hash]
        args += _fields_and_events(fields or {}, events)
        keys = [*_match_keys(match_id), match_key(match_id, "made")]
        in_script_clock = self._clock_key(keys, deadline_ms or None)
        if deadline_ms and not in_script_clock:
            await self._clocks.index_no_later(match_id, deadline_ms)
        # Not on the lean connection, which repeats a command after a lost connection: a
        # create that ran would then answer EXISTS instead of UNAVAILABLE.
        reply = await self._create(keys=keys, args=args)
        if text(reply[0]) in ("EXISTS", "USED"):
            return CommitResult(CommitStatus(text(reply[0])))
        if deadline_ms and not in_script_clock:
            await self._clocks.index_after_commit(match_id, deadline_ms)
        await self._index_live(match_id, _expiry_ms(created, ttl))
        return CommitResult(CommitStatus.OK, int(reply[1]), int(reply[2]))

    async def load(self, match_id: str, known: MatchRecord | None = None,
                   ) -> MatchRecord | None:
        """The match hash in one read, or None if it does not exist (or expired).

        `known`: a record of this match that the caller holds; if the hash is still at
        its version, `known` itself is returned (a version names one hash content)."""
        key = match_key(match_id, "m")
        fast = self._conn.fast
        if fast is not None:
            flat = await fast.execute("HGETALL", key)
            if not flat:
                return None
            if known is not None:
                for i in range(0, len(flat), 2):
                    if flat[i] == b"version":
                        if int(flat[i + 1]) == known.version:
                            return known
                        break
            return _record(match_id, dict(zip(flat[::2], flat[1::2], strict=True)))
        raw = await self._conn.redis.hgetall(key)
        return _record(match_id, raw) if raw else None

    async def load_for_action(
        self, match_id: str, action_key: str
    ) -> tuple[MatchRecord | None, bytes | None]:
        """The response stored for `action_key` if any, else the match hash.

        One script call (one command, one round trip): cheaper on the client than a
        pipeline, and a repeat never needs the state it would not use.
        """
        keys = [match_key(match_id, "m"), match_key(match_id, "idem")]
        reply = await self._conn.script(self._load_for_action, keys, [action_key])
        if int(reply[0]):
            return None, bytes(reply[1])
        flat = reply[1]
        raw = dict(zip(flat[::2], flat[1::2], strict=True))
        return (_record(match_id, raw) if raw else None), None

    async def load_many(self, match_ids: Iterable[str]) -> list[MatchRecord | None]:
        """Several match hashes in one round trip (one command per match, so Cluster-safe)."""
        ids = list(match_ids)
        async with self._conn.redis.pipeline(transaction=False) as pipe:
            for match_id in ids:
                pipe.hgetall(match_key(match_id, "m"))
            raws = await pipe.execute()
        return [_record(i, r) if r else None for i, r in zip(ids, raws, strict=True)]

    async def commit(
        self,
        match_id: str,
        *,
        expected_version: int,
        state: str,
        events: Sequence[Mapping[str, str]] = (),
        action_key: str | None = None,
        response: bytes = b"",
        status: str | None = None,
        deadline_ms: int | None = None,
        fields: Mapping[str, str] | None = None,
        claim_seat: tuple[int, str] | None = None,
        finished: bool = False,
        updated_ms: int | None = None,
        finished_ttl_s: int | None = None,
        id_kept_s: int = 0,
    ) -> CommitResult:
        """Atomically replace the state if the version is still `expected_version`.

        In one Lua script: a known `action_key` returns DUPLICATE with the stored
        response (checked first, so a retry after success is recognised even
        though its version is now stale), and one of the sender's spent keys SPENT;
        a stale version returns CONFLICT; else
        the events are appended (numbered on from the last), state, version + 1,
        status, fields and deadline (`None` keeps it, 0 clears it) are written, the
        response is recorded under `action_key` (replacing the record of the last
        key with the same "<kind>:<who>:" prefix), and the keys get the retention
        TTL (`finished`; `finished_ttl_s` in its place, for a match with nothing to
        keep) or the idle TTL. `claim_seat=(seat, token_hash)` also takes a seat,
        failing with SEAT_TAKEN if it is held. `id_kept_s` as in `create`.
        """
        if fields and _RESERVED & set(fields):
            raise ValueError(f"reserved field names: {sorted(_RESERVED & set(fields))}")
        if not finished:
            ttl = self.idle_ttl_s
        else:
            ttl = self.retention_s if finished_ttl_s is None else finished_ttl_s
        # Settings by name; one left out keeps what is stored (or means none).
        args: list[str | bytes] = ["expect", str(expected_version), "state", state,
                                   "now", str(updated_ms or now_ms()), "match", match_id]
        if action_key:
            args += ["action", action_key, "response", response]
        if status:
            args += ["status", status]
        if finished:
            args += ["finished", "1"]
        if deadline_ms is not None:
            args += ["deadline", str(deadline_ms)]
        if ttl:
            args += ["ttl", str(ttl)]
        if self.stream_maxlen:
            args += ["maxlen", str(self.stream_maxlen)]
        if claim_seat is not None:
            args += ["seat", str(claim_seat[0]), "token_hash", claim_seat[1]]
        if id_kept_s:
            args += ["kept", str(id_kept_s)]
        args += _fields_and_events(fields or {}, events)
        keys = [*_match_keys(match_id), match_key(match_id, "made")]
        in_script_clock = self._clock_key(keys, deadline_ms)
        if deadline_ms and not in_script_clock:
            await self._clocks.index_no_later(match_id, deadline_ms)
        reply = await self._conn.script(self._commit, keys, args)
        outcome = CommitStatus(text(reply[0]))
        if outcome is CommitStatus.DUPLICATE:
            return CommitResult(outcome, response=bytes(reply[1]))
        if outcome is not CommitStatus.OK:
            return CommitResult(outcome, int(reply[1]) if len(reply) > 1 else 0)
        if deadline_ms is not None and not in_script_clock:
            # Shielded: a call cancelled here (its deadline) still writes its clock.
            await asyncio.shield(self._clocks.index_after_commit(match_id, deadline_ms))
        if finished:
            await _after_the_match(f"match {match_id}: finished, not taken out of the "
                                   "lobby index", self._lobby.remove_open([match_id]))
            await _after_the_match(f"match {match_id}: finished, left in the live-match "
                                   "count", self._conn.redis.zrem(_LIVE, match_id))
        elif claim_seat is not None:  # joined: from the lobby's minutes to the idle TTL
            await self._index_live(match_id, _expiry_ms(now_ms(), ttl), joined=True)
        return CommitResult(outcome, int(reply[1]), int(reply[2]))

    async def _index_live(self, match_id: str, expiry_ms: float, joined: bool = False) -> None:
        """Note when a match expires untouched in `bl:live`, which feeds a gauge and nothing
        else. `joined`: move the entry of a match already listed (never add one)."""
        write = (self._conn.redis.zadd(_LIVE, {match_id: expiry_ms}, xx=True) if joined
                 else self._conn.command("ZADD", _LIVE, expiry_ms, match_id))
        await _after_the_match(f"match {match_id} left out of the live-match count", write)

    async def live_count(self) -> int:
        """Unfinished matches. Entries past their expiry are dropped first: those
        matches expired without finishing (an entry is not moved on at every move, so a
        match live for longer than the idle TTL is miscounted)."""
        redis = self._conn.redis
        await redis.zremrangebyscore(_LIVE, "-inf", now_ms())
        return int(await redis.zcard(_LIVE))

    async def claim_flag(self, match_id: str, name: str) -> bool:
        """Set the match's field `name` (`MatchRecord.fields`) if it is not set: True for
        the one caller that set it, so a step two callers may both reach is done once.
        Changes no version; False too when the match is gone."""
        keys = [match_key(match_id, "m")]
        return bool(await self._claim_flag(keys=keys, args=[f"f:{name}"]))

    async def drop_flag(self, match_id: str, name: str) -> None:
        """Unset a field `claim_flag` set (its step failed: the next caller does it)."""
        await self._conn.redis.hdel(match_key(match_id, "m"), f"f:{name}")

    async def discard(self, match_id: str) -> None:
        """Delete a match and its index entries: one whose creation could not be completed
        (deletions go through where a full Redis refuses writes)."""
        await self._conn.redis.delete(*_match_keys(match_id))
        await self._conn.redis.zrem(_LIVE, match_id)
        await self._clocks.unindex(match_id)

    async def existing(self, match_ids: Sequence[str]) -> set[str]:
        """Which of the matches are stored (not expired): pipelined, a round trip per
        `_EXISTS_PER_PIPELINE` ids (per node on Redis Cluster)."""
        found: set[str] = set()
        for start in range(0, len(match_ids), _EXISTS_PER_PIPELINE):
            chunk = match_ids[start:start + _EXISTS_PER_PIPELINE]
            async with self._conn.redis.pipeline(transaction=False) as pipe:
                for match_id in chunk:
                    pipe.exists(match_key(match_id, "m"))
                replies = await pipe.execute()
            found.update(m for m, stored in zip(chunk, replies, strict=True) if stored)
        return found

    async def ttl(self, match_id: str) -> int:
        """Seconds until the match expires; -1 if it never does, -2 if gone."""
        return int(await self._conn.redis.ttl(match_key(match_id, "m")))

    async def stored_response(self, match_id: str, action_key: str) -> bytes | None:
        """The response recorded for an action key, if any."""
        # typed `str | bytes` by redis-py; bytes here (decode_responses=False)
        return cast("bytes | None",
                    await self._conn.redis.hget(match_key(match_id, "idem"), action_key))

    # -- seats -------------------------------------------------------------------

    async def seat_of(self, token: str) -> tuple[str, int] | None:
        """(match id, seat) for a bearer token, or None if unknown or malformed."""
        match_id, dot, _ = token.partition(".")
        if not dot or not valid_id(match_id):
            return None
        seat = await self._conn.command("HGET", match_key(match_id, "seats"),
                                        f"t{hash_token(token)}")
        return (match_id, int(seat)) if seat is not None else None

    async def seat_by_hash(self, match_id: str, token_hash: str) -> int | None:
        """The seat whose token has this hash in `match_id` (the hosted AI's key acts
        for a seat this way: its token hash is the key's hash), or None."""
        seat = await self._conn.command("HGET", match_key(match_id, "seats"), f"t{token_hash}")
        return int(seat) if seat is not None else None

    async def taken_seats(self, match_id: str) -> set[int]:
        """Seats that have a token."""
        raw = await self._conn.redis.hkeys(match_key(match_id, "seats"))
        return {int(text(k)[1:]) for k in raw if text(k).startswith("s")}


def _record(match_id: str, raw: Mapping[bytes | str, bytes | str]) -> MatchRecord:
    data = {text(k): text(v) for k, v in raw.items()}
    return MatchRecord(
        match_id=match_id,
        state=data.get("state", ""),
        version=int(data.get("version", 0)),
        last_event=int(data.get("seq", 0)),
        status=data.get("status", ""),
        deadline_ms=int(data.get("deadline", 0)),
        created_ms=int(data.get("created", 0)),
        updated_ms=int(data.get("updated", 0)),
        fields={k[2:]: v for k, v in data.items() if k.startswith("f:")},
    )
