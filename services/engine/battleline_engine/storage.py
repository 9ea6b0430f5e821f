"""Match persistence in Redis: the only module that knows key names.

Everything stored is opaque to this module: the state is the rules core's
position text, events and idempotency responses are whatever the caller
encodes. What this module guarantees is the atomic step the design needs: one
Lua script checks the expected version and then writes the new state, the
numbered events, the version bump, the idempotency record and the clock
deadline together, or writes nothing.

Keys of one match share the hash tag ``{match_id}`` so they live in one Redis
Cluster slot and every script stays in that slot::

    bl:{id}:m      hash    state, version, seq (last event number), status,
                           deadline (ms, 0 = none), created, updated, f:<name>
    bl:{id}:ev     stream  events with ids "<number>-0", numbered from 1
    bl:{id}:idem   hash    action key -> stored response
    bl:{id}:seats  hash    s<seat> -> token hash, t<token hash> -> seat

Global keys (indexes; the match hash stays authoritative)::

    bl:lobby           zset    open public matches by creation time (ms)
    bl:lobby:<ruleset> zset    the same, one ruleset's (a filtered listing reads only these)
    bl:invite:<code>   string  match id
    bl:clocks          zset    match id -> deadline (ms), read by the sweeper
    bl:live            zset    unfinished matches by creation time (ms), for metrics
    bl:ai:requests     stream  requests for a hosted AI to take a seat: match, seat, level
    bl:ai:client:<h>   zset    a client's unfinished AI matches (h: hash of its address)
    bl:open:client:<h> zset    a client's unjoined OPEN matches

No grpc here: callers map `CommitStatus` to their own error codes.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import re
import secrets
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, Final, cast

import redis.asyncio as aioredis
import redis.exceptions
from redis.crc import key_slot

from .fastredis import FastRedis

if TYPE_CHECKING:
    from redis.commands.core import AsyncScript
    from redis.typing import KeyT, StreamIdT, ZSetScoredMembers

PREFIX: Final = "bl"
LOBBY_KEY: Final = f"{PREFIX}:lobby"
CLOCKS_KEY: Final = f"{PREFIX}:clocks"
LIVE_KEY: Final = f"{PREFIX}:live"
AI_REQUESTS_KEY: Final = f"{PREFIX}:ai:requests"
AI_GROUP: Final = "ai-workers"
CLUSTER_POLL_S: Final = 0.02  # event poll interval on Redis Cluster (no cross-slot XREAD)

AI_PLACE_TTL_S: Final = 8 * 24 * 3600  # a client's AI match list outlives its matches

# KEYS: the client's set of one kind. ARGV: 1 cap, 2 match id, 3 now ms, 4 ttl s. 1 if counted.
_HOLD_PLACE_LUA: Final = """
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[4])
return 1
"""

_ID_RE: Final = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_RESERVED: Final = frozenset(
    {"state", "version", "seq", "status", "deadline", "created", "updated"}
)

# KEYS: m, ev, idem, seats[, clocks]. ARGV: 1 expected version, 2 action key ('' none),
# 3 response, 4 state, 5 status ('' keep), 6 deadline ms ('' keep, '0' none), 7 ttl s
# ('' none), 8 stream maxlen (0 none), 9 seat to claim ('' none), 10 its token hash,
# 11 now ms, 12 match id, 13 n field pairs, pairs..., n events, per event: n pairs, pairs...
# Returns {status, ...}.
_COMMIT_LUA: Final = """
local m, ev, idem, seats = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
if ARGV[2] ~= '' then
  local prior = redis.call('HGET', idem, ARGV[2])
  if prior then return {'DUPLICATE', prior} end
end
local version = redis.call('HGET', m, 'version')
if not version then return {'NOT_FOUND'} end
if version ~= ARGV[1] then return {'CONFLICT', version} end
if ARGV[9] ~= '' then
  if redis.call('HEXISTS', seats, 's' .. ARGV[9]) == 1 then return {'SEAT_TAKEN', version} end
  redis.call('HSET', seats, 's' .. ARGV[9], ARGV[10], 't' .. ARGV[10], ARGV[9])
end
local newv = tonumber(version) + 1
local seq = tonumber(redis.call('HGET', m, 'seq'))
local maxlen = tonumber(ARGV[8])
local i = 14
local nf = tonumber(ARGV[13])
for _ = 1, nf do
  redis.call('HSET', m, ARGV[i], ARGV[i + 1])
  i = i + 2
end
local ne = tonumber(ARGV[i])
i = i + 1
for _ = 1, ne do
  local np = tonumber(ARGV[i])
  i = i + 1
  seq = seq + 1
  local args = {'XADD', ev}
  if maxlen > 0 then
    args[#args + 1] = 'MAXLEN'
    args[#args + 1] = '~'
    args[#args + 1] = maxlen
  end
  args[#args + 1] = seq .. '-0'
  for _ = 1, np * 2 do
    args[#args + 1] = ARGV[i]
    i = i + 1
  end
  redis.call(unpack(args))
end
redis.call('HSET', m, 'state', ARGV[4], 'version', newv, 'seq', seq, 'updated', ARGV[11])
if ARGV[5] ~= '' then redis.call('HSET', m, 'status', ARGV[5]) end
if ARGV[6] ~= '' then
  redis.call('HSET', m, 'deadline', ARGV[6])
  if KEYS[5] then
    if ARGV[6] == '0' then
      redis.call('ZREM', KEYS[5], ARGV[12])
    else
      redis.call('ZADD', KEYS[5], ARGV[6], ARGV[12])
    end
  end
end
if ARGV[2] ~= '' then redis.call('HSET', idem, ARGV[2], ARGV[3]) end
if ARGV[7] ~= '' then
  for k = 1, 4 do redis.call('EXPIRE', KEYS[k], ARGV[7]) end
end
return {'OK', newv, seq}
"""

# Creates a match if the id is free. KEYS as in commit; ARGV: state, now, status,
# n seat pairs (seat, token hash)..., n field pairs..., n events (as in commit), ttl,
# deadline ms ('0' none), match id (KEYS[5], the clock index, only with a deadline).
_CREATE_LUA: Final = """
local m, ev, seats = KEYS[1], KEYS[2], KEYS[4]
if redis.call('EXISTS', m) == 1 then return {'EXISTS'} end
local i = 4
local ns = tonumber(ARGV[i]); i = i + 1
for _ = 1, ns do
  redis.call('HSET', seats, 's' .. ARGV[i], ARGV[i + 1], 't' .. ARGV[i + 1], ARGV[i])
  i = i + 2
end
local nf = tonumber(ARGV[i]); i = i + 1
for _ = 1, nf do
  redis.call('HSET', m, ARGV[i], ARGV[i + 1])
  i = i + 2
end
local ne = tonumber(ARGV[i]); i = i + 1
local seq = 0
for _ = 1, ne do
  local np = tonumber(ARGV[i]); i = i + 1
  seq = seq + 1
  local args = {'XADD', ev, seq .. '-0'}
  for _ = 1, np * 2 do
    args[#args + 1] = ARGV[i]
    i = i + 1
  end
  redis.call(unpack(args))
end
local deadline = ARGV[i + 1] or '0'
redis.call('HSET', m, 'state', ARGV[1], 'version', 1, 'seq', seq, 'status', ARGV[3],
  'deadline', deadline, 'created', ARGV[2], 'updated', ARGV[2])
if KEYS[5] and deadline ~= '0' then redis.call('ZADD', KEYS[5], deadline, ARGV[i + 2]) end
if ARGV[i] ~= '' then
  for k = 1, 4 do redis.call('EXPIRE', KEYS[k], ARGV[i]) end
end
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
    NOT_FOUND = "NOT_FOUND"  # no such match (never created, or expired)
    SEAT_TAKEN = "SEAT_TAKEN"  # the seat to claim is already held: nothing written
    EXISTS = "EXISTS"  # create_match: the id is in use


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


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """One event of a match stream; `fields` are exactly what the caller committed."""

    number: int
    fields: dict[str, str]


@dataclass(frozen=True, slots=True)
class EventPage:
    """Events after a point; `complete` is False when some were trimmed or expired."""

    events: list[StoredEvent]
    complete: bool
    last_event: int


def raise_lost_cancellation() -> None:
    """Raise CancelledError if the running task was cancelled but a Redis call lost it.

    redis-py's asyncio client can swallow a cancellation that lands mid-command (the
    call returns normally and the task runs on: redis/redis-py#2028, #2551; often in
    a blocking XREAD). A loop that waits on Redis calls this after each call, so a
    cancelled task stops instead of running (or waiting) on.
    """
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


def now_ms() -> int:
    """Wall-clock milliseconds, the unit of every stored time."""
    return int(time.time() * 1000)


def valid_id(value: str) -> bool:
    """Whether `value` can be an id inside a key (no braces, colons, spaces)."""
    return _ID_RE.fullmatch(value) is not None  # fullmatch: `$` alone lets a final newline in


def check_id(value: str, what: str = "match id") -> str:
    """Reject ids that could escape their key (braces, colons, spaces)."""
    if not valid_id(value):
        # The value is not echoed: a long one would not fit in the status's metadata.
        raise ValueError(f"bad {what} ({len(value)} characters): 1-64 of A-Z a-z 0-9 _ -")
    return value


def new_match_id() -> str:
    """A random match id (96 bits), safe inside a hash tag."""
    return secrets.token_urlsafe(12)


def new_seat_token(match_id: str) -> str:
    """A bearer token for a seat: the match id plus 256 random bits.

    The match id inside lets the server find the hash without a global index,
    so the token lives (and expires) in the match's own slot.
    """
    return f"{check_id(match_id)}.{secrets.token_urlsafe(32)}"


def _places_key(kind: str, client: str) -> str:
    """A client's matches of one kind ("ai", "open"); the address hashed, since a
    forwarded address is the caller's text."""
    return f"{PREFIX}:{kind}:client:{hashlib.sha256(client.encode()).hexdigest()[:32]}"


def _lobby_key(ruleset: str) -> str:
    """The lobby index of one ruleset ("": all of them)."""
    return f"{LOBBY_KEY}:{ruleset}" if ruleset else LOBBY_KEY


def hash_token(token: str) -> str:
    """SHA-256 of a token; only this is stored."""
    return hashlib.sha256(token.encode()).hexdigest()


def match_key(match_id: str, part: str) -> str:
    """Key of one part of a match; all parts share the `{match_id}` hash tag."""
    return f"{PREFIX}:{{{check_id(match_id)}}}:{part}"


def _match_keys(match_id: str) -> list[str]:
    base = f"{PREFIX}:{{{check_id(match_id)}}}:"
    return [base + "m", base + "ev", base + "idem", base + "seats"]


def _flat_events(events: Sequence[Mapping[str, str]]) -> list[str]:
    out = [str(len(events))]
    for event in events:
        if not event:
            raise ValueError("an event needs at least one field")
        out.append(str(len(event)))
        for key, value in event.items():
            out += [key, value]
    return out


def _flat_fields(fields: Mapping[str, str]) -> list[str]:
    out = [str(len(fields))]
    for key, value in fields.items():
        out += [f"f:{key}", value]
    return out


def _s(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


class Storage:
    """Async access to match state, streams, tokens, lobby, clocks and AI requests.

    `retention_s`: how long a finished match (record, stream, tokens) is kept.
    `idle_ttl_s`: an unfinished match untouched this long expires (0: never).
    `stream_maxlen`: approximate cap on events kept per match (0: all).
    `cluster`: on Redis Cluster the global clock index cannot be written from the
    match's script (another slot), so it is updated right after the commit instead;
    the match hash's deadline stays authoritative either way.
    `fast`: a lean connection to the same Redis for the commands of every action
    (load, load_for_action, commit); without it they go through `client` too.
    """

    def __init__(
        self,
        client: aioredis.Redis | aioredis.RedisCluster,
        *,
        retention_s: int = 7 * 24 * 3600,
        idle_ttl_s: int = 30 * 24 * 3600,
        stream_maxlen: int = 0,
        cluster: bool = False,
        fast: FastRedis | None = None,
    ) -> None:
        self.redis = client
        self.fast = fast
        self.retention_s = retention_s
        self.idle_ttl_s = idle_ttl_s
        self.stream_maxlen = stream_maxlen
        self.cluster = cluster
        self._commit = client.register_script(_COMMIT_LUA)
        self._create = client.register_script(_CREATE_LUA)
        self._load_for_action = client.register_script(_LOAD_FOR_ACTION_LUA)
        self._hold_place = client.register_script(_HOLD_PLACE_LUA)

    @classmethod
    def from_url(cls, url: str, **options: int | bool) -> Storage:
        """Connect (lazily) to the Redis at `url`; hiredis parses replies when installed.

        A `redis+cluster://` (or `rediss+cluster://`) URL names any node of a Redis
        Cluster: the cluster client discovers the others and `cluster` mode is on.
        """
        if is_cluster_url(url):
            cluster_client = aioredis.RedisCluster.from_url(
                url.replace("+cluster", "", 1), decode_responses=False, health_check_interval=30
            )
            _use_connection_class(cluster_client, _ResetSafeConnection)
            return cls(cluster_client, **{**options, "cluster": True})  # type: ignore[arg-type]
        # Bounded and blocking: under a burst of concurrent calls, commands wait for one
        # of the pooled connections instead of each opening a socket (which fails under
        # load with 1000 concurrent matches).
        pool = aioredis.BlockingConnectionPool.from_url(
            url, max_connections=64, timeout=20, decode_responses=False,
            health_check_interval=30,
        )
        client = aioredis.Redis(connection_pool=pool)
        fast = FastRedis(url) if FastRedis.supports(url) else None
        return cls(client, **options, fast=fast)  # type: ignore[arg-type]

    async def close(self) -> None:
        """Close the connection pool."""
        if self.fast is not None:
            await self.fast.close()
        await self.redis.aclose()

    async def _script(self, script: AsyncScript, keys: list[str], args: list[Any]) -> Any:
        """Run a registered script, on the lean connection when there is one."""
        if self.fast is not None:
            return await self.fast.evalsha(script.sha, script.script, keys, args)
        return await script(keys=keys, args=args)

    async def _command(self, *args: Any) -> Any:
        """One command on the lean connection when there is one (its raw reply)."""
        if self.fast is not None:
            return await self.fast.execute(*args)
        return await self.redis.execute_command(*args)

    async def ping(self) -> bool:
        """Whether Redis answers (for health checks)."""
        return bool(await self.redis.ping())

    # -- matches -----------------------------------------------------------

    async def create_match(
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
    ) -> CommitResult:
        """Store a new match at version 1 with its first events, seat token hashes and
        clock deadline (0: none); it expires after `ttl_s` untouched (default: the idle
        TTL; the next commit sets that again)."""
        created = now_ms()
        ttl = self.idle_ttl_s if ttl_s is None else ttl_s
        args: list[str] = [state, str(created), status, str(len(seats))]
        for seat, token_hash in seats.items():
            args += [str(seat), token_hash]
        args += _flat_fields(fields or {})
        args += _flat_events(events)
        args += [str(ttl) if ttl else "", str(deadline_ms), match_id]
        keys = _match_keys(match_id)
        in_script_clock = not self.cluster and deadline_ms
        if in_script_clock:
            keys.append(CLOCKS_KEY)
        # Not on the lean connection, which repeats a command after a lost connection: a
        # create that ran would then answer EXISTS instead of UNAVAILABLE.
        reply = await self._create(keys=keys, args=args)
        if _s(reply[0]) == "EXISTS":
            return CommitResult(CommitStatus.EXISTS)
        if deadline_ms and not in_script_clock:
            await self._index_deadline(match_id, deadline_ms)
        await self._command("ZADD", LIVE_KEY, created, match_id)
        return CommitResult(CommitStatus.OK, int(reply[1]), int(reply[2]))

    async def load(self, match_id: str, known: MatchRecord | None = None,
                   ) -> MatchRecord | None:
        """The match hash in one read, or None if it does not exist (or expired).

        `known`: a record of this match that the caller holds; if the hash is still at
        its version, `known` itself is returned (a version names one hash content)."""
        key = match_key(match_id, "m")
        if self.fast is not None:
            flat = await self.fast.execute("HGETALL", key)
            if not flat:
                return None
            if known is not None:
                for i in range(0, len(flat), 2):
                    if flat[i] == b"version":
                        if int(flat[i + 1]) == known.version:
                            return known
                        break
            return _record(match_id, dict(zip(flat[::2], flat[1::2], strict=True)))
        raw = await self.redis.hgetall(key)
        return _record(match_id, raw) if raw else None

    async def load_for_action(
        self, match_id: str, action_key: str
    ) -> tuple[MatchRecord | None, bytes | None]:
        """The response stored for `action_key` if any, else the match hash.

        One script call (one command, one round trip): cheaper on the client than a
        pipeline, and a repeat never needs the state it would not use.
        """
        keys = [match_key(match_id, "m"), match_key(match_id, "idem")]
        reply = await self._script(self._load_for_action, keys, [action_key])
        if int(reply[0]):
            return None, bytes(reply[1])
        flat = reply[1]
        raw = dict(zip(flat[::2], flat[1::2], strict=True))
        return (_record(match_id, raw) if raw else None), None

    async def load_many(self, match_ids: Iterable[str]) -> list[MatchRecord | None]:
        """Several match hashes in one round trip (one command per match, so Cluster-safe)."""
        ids = list(match_ids)
        async with self.redis.pipeline(transaction=False) as pipe:
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
    ) -> CommitResult:
        """Atomically replace the state if the version is still `expected_version`.

        In one Lua script: a known `action_key` returns DUPLICATE with the stored
        response (checked first, so a retry after success is recognised even
        though its version is now stale); a stale version returns CONFLICT; else
        the events are appended (numbered on from the last), state, version + 1,
        status, fields and deadline (`None` keeps it, 0 clears it) are written, the
        response is recorded under `action_key`, and the keys get the retention
        TTL (`finished`) or the idle TTL. `claim_seat=(seat, token_hash)` also
        takes a seat, failing with SEAT_TAKEN if it is held.
        """
        if fields and _RESERVED & set(fields):
            raise ValueError(f"reserved field names: {sorted(_RESERVED & set(fields))}")
        ttl = self.retention_s if finished else self.idle_ttl_s
        args: list[str | bytes] = [
            str(expected_version),
            action_key or "",
            response,
            state,
            status or "",
            "" if deadline_ms is None else str(deadline_ms),
            str(ttl) if ttl else "",
            str(self.stream_maxlen),
            "" if claim_seat is None else str(claim_seat[0]),
            "" if claim_seat is None else claim_seat[1],
            str(updated_ms or now_ms()),
            match_id,
        ]
        args += _flat_fields(fields or {})
        args += _flat_events(events)
        keys = _match_keys(match_id)
        in_script_clock = not self.cluster and deadline_ms is not None
        if in_script_clock:
            keys.append(CLOCKS_KEY)
        reply = await self._script(self._commit, keys, args)
        status_ = CommitStatus(_s(reply[0]))
        if status_ is CommitStatus.DUPLICATE:
            return CommitResult(status_, response=bytes(reply[1]))
        if status_ is not CommitStatus.OK:
            return CommitResult(status_, int(reply[1]) if len(reply) > 1 else 0)
        if deadline_ms is not None and not in_script_clock:
            await self._index_deadline(match_id, deadline_ms)
        if finished:
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.zrem(LOBBY_KEY, match_id)
                pipe.zrem(LIVE_KEY, match_id)
                await pipe.execute()
        return CommitResult(status_, int(reply[1]), int(reply[2]))

    async def _index_deadline(self, match_id: str, deadline_ms: int) -> None:
        if deadline_ms:
            await self.redis.zadd(CLOCKS_KEY, {match_id: deadline_ms})
        else:
            await self.redis.zrem(CLOCKS_KEY, match_id)

    async def live_count(self) -> int:
        """Unfinished matches. Entries older than the idle TTL are dropped first:
        those matches expired without finishing (a longer live match is miscounted)."""
        if self.idle_ttl_s:
            await self.redis.zremrangebyscore(LIVE_KEY, "-inf", now_ms() - self.idle_ttl_s * 1000)
        return int(await self.redis.zcard(LIVE_KEY))

    async def exists(self, match_id: str) -> bool:
        """Whether the match is stored (not expired)."""
        return bool(await self.redis.exists(match_key(match_id, "m")))

    async def ttl(self, match_id: str) -> int:
        """Seconds until the match expires; -1 if it never does, -2 if gone."""
        return int(await self.redis.ttl(match_key(match_id, "m")))

    # -- idempotency ---------------------------------------------------------

    async def stored_response(self, match_id: str, action_key: str) -> bytes | None:
        """The response recorded for an action key, if any."""
        # typed `str | bytes` by redis-py; bytes here (decode_responses=False)
        return cast("bytes | None", await self.redis.hget(match_key(match_id, "idem"), action_key))

    # -- events ----------------------------------------------------------------

    async def events_after(self, match_id: str, after: int, limit: int = 1000) -> EventPage:
        """Events numbered > `after`, oldest first; incomplete if some are gone."""
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.xrange(match_key(match_id, "ev"), min=f"({after}-0", max="+", count=limit)
            pipe.hget(match_key(match_id, "m"), "seq")
            entries, seq = await pipe.execute()
        events = [_event(i, f) for i, f in entries]
        last = int(seq) if seq is not None else 0
        # Complete when nothing between `after` and the first kept event is missing.
        complete = events[0].number == after + 1 if events else last <= after
        return EventPage(events, complete, last)

    async def read_new_events(
        self, cursors: Mapping[str, int], block_ms: int = 5000, count: int = 100
    ) -> dict[str, list[StoredEvent]]:
        """One blocking XREAD over many match streams (the per-process fan-out reader).

        `cursors` maps match id -> last event number seen. Returns new events per
        match (possibly none after `block_ms`).
        """
        if not cursors:
            return {}
        streams = {match_key(m, "ev"): f"{n}-0" for m, n in cursors.items()}
        if isinstance(self.redis, aioredis.RedisCluster):
            return await self._poll_cluster_streams(streams, block_ms, count)
        # redis-py types `streams` as an invariant dict[KeyT, StreamIdT], not a Mapping
        reply = await self.redis.xread(streams, count=count, block=block_ms)  # type: ignore[arg-type]
        # typed for RESP3 too; this client speaks RESP2: [[key, entries], ...], None if none
        return _by_match(cast("list[list[Any]] | None", reply) or [])

    async def _poll_cluster_streams(
        self, streams: Mapping[str, str], block_ms: int, count: int
    ) -> dict[str, list[StoredEvent]]:
        """Cluster stand-in for one blocking XREAD: streams of many matches live in many
        slots and one XREAD may not cross slots, so poll one non-blocking XREAD per slot
        (pipelined: one round trip per node) until something arrives or `block_ms` ends."""
        by_slot: dict[int, dict[KeyT, StreamIdT]] = {}
        for key, cursor in streams.items():
            by_slot.setdefault(key_slot(key.encode()), {})[key] = cursor
        deadline = time.monotonic() + block_ms / 1000
        while True:
            async with self.redis.pipeline(transaction=False) as pipe:
                for group in by_slot.values():
                    pipe.xread(group, count=count)
                replies = await pipe.execute()
            out = _by_match([item for reply in replies for item in reply or []])
            if out or time.monotonic() >= deadline:
                return out
            await asyncio.sleep(min(CLUSTER_POLL_S, max(0.0, deadline - time.monotonic())))

    async def poke(self, name: str) -> int:
        """Append to a private wake-up stream (an id like a match id); returns its number.

        A process's blocking `read_new_events` includes its own wake-up stream, so
        adding a match to the read set can interrupt the wait without a new connection.
        """
        number = int(await self.redis.incr(match_key(name, "n")))
        try:
            await self.redis.xadd(match_key(name, "ev"), {"w": "1"}, id=f"{number}-0", maxlen=1)
        except aioredis.ResponseError as err:
            # redis-py re-sends a command whose reply was lost (a Redis node restarting):
            # the entry is there already, which is all a wake-up needs.
            if "equal or smaller" not in str(err):
                raise
        return number

    async def drop_stream(self, name: str) -> None:
        """Delete a wake-up stream made by `poke`."""
        await self.redis.delete(match_key(name, "ev"), match_key(name, "n"))

    # -- seats -------------------------------------------------------------------

    async def seat_of(self, token: str) -> tuple[str, int] | None:
        """(match id, seat) for a bearer token, or None if unknown or malformed."""
        match_id, dot, _ = token.partition(".")
        if not dot or not valid_id(match_id):
            return None
        seat = await self._command("HGET", match_key(match_id, "seats"), f"t{hash_token(token)}")
        return (match_id, int(seat)) if seat is not None else None

    async def seat_by_hash(self, match_id: str, token_hash: str) -> int | None:
        """The seat whose token has this hash in `match_id` (the hosted AI's key acts
        for a seat this way: its token hash is the key's hash), or None."""
        seat = await self._command("HGET", match_key(match_id, "seats"), f"t{token_hash}")
        return int(seat) if seat is not None else None

    async def taken_seats(self, match_id: str) -> set[int]:
        """Seats that have a token."""
        raw = await self.redis.hkeys(match_key(match_id, "seats"))
        return {int(_s(k)[1:]) for k in raw if _s(k).startswith("s")}

    # -- lobby and invites -----------------------------------------------------

    async def list_open(self, limit: int, after: tuple[int, str] | None = None,
                        ruleset: str = "") -> list[tuple[str, int]]:
        """Up to `limit` open public matches (of `ruleset`, "": any) as (match id, created
        ms), newest first, after the cursor `after` = (created ms, match id) of the last
        one seen. Equal times are ordered by descending id (the sorted set's order)."""
        key = _lobby_key(ruleset)
        out: list[tuple[str, int]] = []
        if after is not None:  # the rest of after's millisecond first: ids below its id
            same = cast("list[bytes]", await self.redis.zrevrangebyscore(key, after[0], after[0]))
            out = [(m, after[0]) for m in map(_s, same) if m < after[1]][:limit]
        if len(out) < limit:
            top = "+inf" if after is None else f"({after[0]}"
            raw = cast("ZSetScoredMembers", await self.redis.zrevrangebyscore(
                key, top, "-inf", start=0, num=limit - len(out), withscores=True))
            out += [(_s(m), int(score)) for m, score in raw]
        return out

    async def add_open(self, match_id: str, created_ms: int, ruleset: str,
                       ttl_s: int) -> None:
        """List a match in the lobby (all rulesets and its own), and drop entries older
        than `ttl_s`: their matches expired unjoined."""
        async with self.redis.pipeline(transaction=False) as pipe:
            for key in (LOBBY_KEY, _lobby_key(check_id(ruleset, "ruleset"))):
                pipe.zadd(key, {check_id(match_id): created_ms})
                pipe.zremrangebyscore(key, "-inf", f"({created_ms - ttl_s * 1000}")
            await pipe.execute()

    async def remove_open(self, match_ids: Sequence[str], rulesets: Iterable[str]) -> None:
        """Unlist matches (full, finished, or found gone) from the lobby and from the
        indexes of `rulesets` (those it may be in: a gone match's is unknown)."""
        if match_ids:
            async with self.redis.pipeline(transaction=False) as pipe:
                for key in [LOBBY_KEY, *(_lobby_key(r) for r in rulesets)]:
                    pipe.zrem(key, *match_ids)
                await pipe.execute()

    async def set_invite(self, code: str, match_id: str, ttl_s: int) -> bool:
        """Map an invite code to a match; False if the code is in use."""
        key = f"{PREFIX}:invite:{check_id(code, 'invite code')}"
        return bool(await self.redis.set(key, check_id(match_id), nx=True, ex=ttl_s))

    async def resolve_invite(self, code: str) -> str | None:
        """The match id of an invite code."""
        if not valid_id(code):
            return None
        value = await self.redis.get(f"{PREFIX}:invite:{code}")
        return _s(value) if value is not None else None

    async def delete_invite(self, code: str) -> None:
        """Forget an invite code (its seat is filled)."""
        await self.redis.delete(f"{PREFIX}:invite:{check_id(code, 'invite code')}")

    # -- clocks ------------------------------------------------------------------

    async def due_clocks(self, at_ms: int, limit: int = 100) -> list[tuple[str, int]]:
        """Matches whose indexed deadline is <= `at_ms`: (match id, deadline ms).

        The index may be stale; the caller re-checks the match hash's deadline and
        version before acting (and commits with a version check anyway).
        """
        raw = cast("ZSetScoredMembers", await self.redis.zrangebyscore(
            CLOCKS_KEY, "-inf", at_ms, start=0, num=limit, withscores=True
        ))
        return [(_s(m), int(score)) for m, score in raw]

    async def unindex_clock(self, match_id: str) -> None:
        """Drop a match from the clock index (gone, or its clock is not running)."""
        await self.redis.zrem(CLOCKS_KEY, match_id)

    # -- AI seat requests ------------------------------------------------------

    async def ensure_ai_group(self) -> None:
        """Create the AI workers' consumer group (and stream) if missing."""
        try:
            await self.redis.xgroup_create(AI_REQUESTS_KEY, AI_GROUP, id="0", mkstream=True)
        except aioredis.ResponseError as err:
            if "BUSYGROUP" not in str(err):
                raise

    async def request_ai_seat(self, match_id: str, seat: int, level: int) -> str:
        """Ask an AI worker to play `seat` of a match; returns the request id.

        The entry holds no credential: the worker joins with the AI's own key.
        """
        entry = {"match": check_id(match_id), "seat": str(seat), "level": str(level)}
        return _s(await self.redis.xadd(AI_REQUESTS_KEY, entry))  # type: ignore[arg-type]

    async def places_of(self, kind: str, client: str) -> list[str]:
        """The matches of `kind` ("ai", "open") counted against a client (some may have
        ended or been joined since)."""
        raw = cast("list[bytes]", await self.redis.zrange(_places_key(kind, client), 0, -1))
        return [_s(m) for m in raw]

    async def hold_place(self, kind: str, client: str, match_id: str, cap: int,
                         ttl_s: int = AI_PLACE_TTL_S) -> bool:
        """Count `match_id` against the client's matches of `kind` if fewer than `cap`
        are counted (checked and counted in one script); False when full. The count
        expires `ttl_s` after its last addition (longer than its matches live)."""
        key = _places_key(kind, client)
        return bool(await self._hold_place(keys=[key], args=[cap, match_id, now_ms(), ttl_s]))

    async def free_places(self, kind: str, client: str, *match_ids: str) -> None:
        """Stop counting these matches (ended, joined, gone, or never created)."""
        if match_ids:
            await self.redis.zrem(_places_key(kind, client), *match_ids)

    async def read_ai_requests(
        self, consumer: str, count: int = 10, block_ms: int = 5000
    ) -> list[tuple[str, dict[str, str]]]:
        """New AI seat requests for this consumer (XREADGROUP); ack each when handled."""
        reply = await self.redis.xreadgroup(
            AI_GROUP, consumer, {AI_REQUESTS_KEY: ">"}, count=count, block=block_ms
        )
        out: list[tuple[str, dict[str, str]]] = []
        # typed for RESP3 too; this client speaks RESP2: [[key, entries], ...], None if none
        for _key, entries in cast("list[list[Any]] | None", reply) or []:
            for entry_id, entry in entries:
                out.append((_s(entry_id), {_s(k): _s(v) for k, v in entry.items()}))
        return out

    async def ack_ai_request(self, request_id: str) -> None:
        """Mark an AI seat request handled."""
        await self.redis.xack(AI_REQUESTS_KEY, AI_GROUP, request_id)


class _ResetSafeConnection(aioredis.Connection):
    """A write on a connection that the peer reset (a restarted Redis Cluster node) can
    fail inside asyncio's transport with AttributeError or TypeError instead of
    ConnectionError (redis-py issue 4287), which skips the cluster client's retry and
    reaches the caller as an unknown error. Here it is the ConnectionError it is: the
    command was not sent, so the cluster client reconnects and retries it."""

    async def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        try:
            await super().send_packed_command(command, check_health)
        except (AttributeError, TypeError) as err:
            with contextlib.suppress(Exception):
                await self.disconnect(nowait=True)
            raise redis.exceptions.ConnectionError(f"connection lost: {err}") from err


def _use_connection_class(client: aioredis.RedisCluster, connection_class: type) -> None:
    """The async cluster client has no `connection_class` option: set it on the shared
    node settings (nodes found later) and on the start-up nodes (made already)."""
    client.connection_kwargs["connection_class"] = connection_class
    manager = client.nodes_manager
    manager.connection_kwargs["connection_class"] = connection_class
    for node in manager.startup_nodes.values():
        node.connection_class = connection_class


def is_cluster_url(url: str) -> bool:
    """Whether `url` asks for the Redis Cluster client (`redis+cluster://...`)."""
    return url.startswith(("redis+cluster://", "rediss+cluster://"))


def _by_match(reply: Iterable[Sequence[Any]]) -> dict[str, list[StoredEvent]]:
    out: dict[str, list[StoredEvent]] = {}
    for key, entries in reply:
        if entries:
            match_id = _s(key).split("{", 1)[1].split("}", 1)[0]
            out[match_id] = [_event(i, f) for i, f in entries]
    return out


def _record(match_id: str, raw: Mapping[bytes | str, bytes | str]) -> MatchRecord:
    data = {_s(k): _s(v) for k, v in raw.items()}
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


def _event(entry_id: bytes | str, fields: Mapping[bytes, bytes]) -> StoredEvent:
    number = int(_s(entry_id).split("-", 1)[0])
    return StoredEvent(number, {_s(k): _s(v) for k, v in fields.items()})
