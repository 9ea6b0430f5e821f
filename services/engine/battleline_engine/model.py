"""A match as the engine keeps it: settings, progress fields and the game state.

The match hash (see storage/matches.py) holds the rules core's position text as the
state plus a few `f:` fields written here: `meta` (settings as JSON, fixed
after both seats are taken), `game`, `score`, `winner`, `end`, and the clock
fields of clocks.py. This module only converts; it does no I/O.
"""

from __future__ import annotations

import functools
import hashlib
import json
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum
from typing import Final, Generic, TypeVar

from battleline_rules import (
    Action,
    ClaimTiming,
    Event,
    GameState,
    Options,
    card_name,
    format_action,
    load_position,
    new_game,
)

from .boot_clock import HAS_BOOT_CLOCK, boot_clock
from .storage import MatchRecord


class Status(StrEnum):
    """Where a match is; stored as its value (the match hash's `status`)."""

    WAITING = "waiting"  # for the other seat to be taken
    PLAYING = "playing"
    FINISHED = "finished"


class Opponent(StrEnum):
    """Who takes the seat the creator leaves; stored as its value in `meta`."""

    OPEN = "open"  # a person: by the lobby or an invite code
    AI = "ai"  # the hosted AI
    LOCAL = "local"  # the creator too (hot seat)


class ClockKind(StrEnum):
    """The time control of a match; stored as its value in `meta`."""

    PER_MOVE = "per_move"
    PER_GAME = "per_game"
    NONE = "none"


@dataclass(frozen=True, slots=True)
class Meta:
    """Settings of a match, stored as JSON in the `meta` field."""

    ruleset: str
    claim_timing: str = ClaimTiming.AFTER_PLAY.value
    hand_size: int | None = None
    series_games: int = 1
    clock: ClockKind = ClockKind.PER_MOVE
    clock_ms: int = 0
    opponent: Opponent = Opponent.OPEN
    private: bool = False
    ai_level: int = 0
    ai_seat: int = -1  # the seat reserved for the hosted AI (its key acts for it)
    seed: int | None = None  # a client-chosen base seed (never for OPEN matches)
    names: tuple[str, str] = ("", "")
    auto_claim: tuple[bool, bool] = (False, False)
    invite: str = ""
    open_seat: int = -1  # the seat an OPEN or AI match is waiting to fill

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> Meta:
        return _meta_from_json(text)

    @classmethod
    def _parse(cls, text: str) -> Meta:
        data = json.loads(text)
        data["names"] = tuple(data["names"])
        data["auto_claim"] = tuple(data["auto_claim"])
        data["clock"] = ClockKind(data["clock"])
        data["opponent"] = Opponent(data["opponent"])
        # Matches stored before the AI's key: their join ticket is no credential any more.
        data.pop("ai_ticket_hash", None)
        return cls(**data)

    @property
    def occupied(self) -> frozenset[int]:
        """Seats held by someone (a seat waiting for a player or an AI is not)."""
        return frozenset({0, 1} - {self.open_seat})

    def options(self, first_player: int) -> Options:
        """The rules-core options of one game of this match."""
        return Options(ClaimTiming(self.claim_timing), self.hand_size, first_player)

    def game_seed(self, game: int) -> int | None:
        """The deal of game `game` (from 1), if a seed was chosen (`series_game_seed`)."""
        return None if self.seed is None else series_game_seed(self.seed, game)

    def with_seat(self, seat: int, name: str, auto_claim: bool) -> Meta:
        """The settings once `seat` is taken by someone with these preferences."""
        names = list(self.names)
        autos = list(self.auto_claim)
        names[seat], autos[seat] = name, auto_claim
        return replace(
            self, names=(names[0], names[1]), auto_claim=(autos[0], autos[1]), open_seat=-1,
        )


@functools.lru_cache(maxsize=4096)
def _meta_from_json(text: str) -> Meta:
    """Settings are read on every call and rarely change: parse each text once."""
    return Meta._parse(text)


def series_game_seed(seed: int, game: int) -> int:
    """The deal of game `game` (from 1) of a series with the chosen seed `seed`: the seed
    itself, then seeds derived from it (so a seeded series replays whole)."""
    if game == 1:
        return seed
    digest = hashlib.sha256(f"{seed}:{game}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def deal(meta: Meta, game: int, first_player: int) -> GameState:
    """A fresh game of the match."""
    return new_game(meta.ruleset, meta.options(first_player), meta.game_seed(game))


CANCELLED: Final = "cancelled"  # Match.end of a match that ended before its first game
CREATE_REQUEST: Final = "create_request"  # field: the digest of the create a secret made it by
# How long an engine process trusts what it cached of a match or a token before reading
# it again (`cache_clock` time): once a match is gone, its id and tokens may name another.
CACHE_TRUST_S: Final = 24 * 3600
# How long a match's id is kept from naming a second match after its own is gone, when it
# was derived from its creator's secret: the same tokens would name the new match, and an
# engine process's token and state caches would take them for the old one's (twenty-fifth
# audit) until they stop trusting what they hold, and a request for the hosted AI stays in
# its stream for a week (`storage.ai.KEEP_REQUESTS_MS`): two requests would take one seat.
# Kept for 400 days until the thirty-fourth audit: 85 bytes a create for 13 months.
# A random id is never made twice.
SECRET_ID_KEPT_S: Final = 8 * CACHE_TRUST_S


K = TypeVar("K")
V = TypeVar("V")


def cache_clock() -> float:
    """Seconds on a clock that runs while the machine sleeps (Linux's boot time, elsewhere
    the wall clock), so a cache trusted for `CACHE_TRUST_S` is not trusted across the days a
    laptop was suspended, while Redis's clock expired the match and its mark."""
    return boot_clock() if HAS_BOOT_CLOCK else time.time()


class TrustedCache(Generic[K, V]):
    """What an engine process remembers of matches and tokens: at most `size` entries
    (the one stored longest ago goes first), each trusted for `CACHE_TRUST_S`."""

    def __init__(self, size: int, clock: Callable[[], float] = cache_clock) -> None:
        self.size = size
        self._clock = clock
        self._held: OrderedDict[K, tuple[V, float]] = OrderedDict()  # and when stored

    def get(self, key: K) -> V | None:
        held = self._held.get(key)
        return held[0] if held is not None and self._clock() - held[1] < CACHE_TRUST_S else None

    def put(self, key: K, value: V) -> None:
        self._held[key] = (value, self._clock())
        self._held.move_to_end(key)
        if len(self._held) > self.size:
            self._held.popitem(last=False)


def id_kept_s(fields: dict[str, str]) -> int:
    """`SECRET_ID_KEPT_S` for a match made under a secret (its fields), else 0."""
    return SECRET_ID_KEPT_S if CREATE_REQUEST in fields else 0


@dataclass(slots=True)
class Match:
    """One read of a match: the record plus its parsed settings and state."""

    record: MatchRecord
    meta: Meta
    state: GameState
    game: int = 1
    score: tuple[int, int] = (0, 0)
    winner: int | None = None  # of the match, once finished
    end: str = ""  # "resignation", "timeout" or CANCELLED when the match ended that way
    fields: dict[str, str] = field(default_factory=dict)
    # What every viewer's MatchView of this version shares, encoded once (views.py).
    public_view: bytes | None = None

    @property
    def match_id(self) -> str:
        return self.record.match_id

    @property
    def version(self) -> int:
        return self.record.version

    @property
    def status(self) -> Status:
        return Status(self.record.status)

    @property
    def finished(self) -> bool:
        return self.record.status == Status.FINISHED


@functools.lru_cache(maxsize=16384)
def action_text(action: Action) -> str:
    """`format_action`, memoised: a view lists dozens of legal actions on every call and
    the set of distinct actions is small (cards x flags), so each is formatted once."""
    return format_action(action)


def stored_event(kind: str, version: int, now_ms: int, seat: int | None = None,
                 event: Event | None = None, text: str = "", final: bool = False) -> dict[str, str]:
    """The fields of an event as stored (unredacted; projected on the way out, views.py)."""
    out = {"k": kind, "v": str(version), "t": str(now_ms),
           "s": "" if seat is None else str(seat)}
    if event is not None:
        out["a"] = action_text(event.action)
        out["d"] = card_name(event.drawn) if event.drawn >= 0 else ""
    else:
        out["x"] = text
    if final:
        out["end"] = "1"
    return out


def progress_fields(
    game: int, score: tuple[int, int], winner: int | None, end: str
) -> dict[str, str]:
    """The `f:` fields that record a match's progress."""
    return {
        "game": str(game),
        "score": f"{score[0]},{score[1]}",
        "winner": "" if winner is None else str(winner),
        "end": end,
    }


class StateCache:
    """The latest match (and its parsed state) this process has read or written, per
    match id: a version names one state (and one match hash) forever, since every
    write of a match bumps it.

    Parsing the position text is the costliest part of a read; callers must
    clone before changing a cached state. The match lets a submit that names
    the version this process last saw skip the read: its commit checks that
    version in Redis anyway (see Matches.submit). Older versions are not kept:
    nothing but a retried action would use them, and holding thousands of parsed
    states made every full garbage collection slower.
    """

    def __init__(self, size: int = 4096, clock: Callable[[], float] = cache_clock) -> None:
        self._matches: TrustedCache[str, Match] = TrustedCache(size, clock)

    def get(self, record: MatchRecord) -> GameState:
        """The parsed state of `record` (the held match's, if it is at that version)."""
        held = self.match(record.match_id, record.version)
        return held.state if held is not None else load_position(record.state)

    def remember(self, match: Match) -> None:
        """Keep `match` as the match at its version (unless a later one is kept)."""
        match_id, version = match.record.match_id, match.record.version
        old = self.latest(match_id)
        if old is not None and old.record.version > version:  # a slower call read an older
            return
        self._matches.put(match_id, match)

    def latest(self, match_id: str) -> Match | None:
        """The latest version of the match this process has read or written (within
        `CACHE_TRUST_S`)."""
        return self._matches.get(match_id)

    def match(self, match_id: str, version: int) -> Match | None:
        """The match at `version`, if that is the latest this process has seen of it."""
        found = self.latest(match_id)
        return found if found is not None and found.record.version == version else None


def parse_match(record: MatchRecord, cache: StateCache) -> Match:
    """A Match from one read of its hash."""
    f = record.fields
    score = tuple(int(x) for x in f.get("score", "0,0").split(","))
    match = Match(
        record=record,
        meta=Meta.from_json(f["meta"]),
        state=cache.get(record),
        game=int(f.get("game", "1")),
        score=(score[0], score[1]),
        winner=int(f["winner"]) if f.get("winner") else None,
        end=f.get("end", ""),
        fields=f,
    )
    cache.remember(match)
    return match
