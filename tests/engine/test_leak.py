"""Leak test: over many random complete matches, no message to a seat or a spectator
names a card it may not see (the other hand, the decks and so Scout's returns, deck52's
removed cards) or the seed, before the end.

Every response and stream message is kept with the version it describes; after the
match, its full record (revealed once over) is replayed with the rules core to know
exactly what was secret at each version, and every string in every message is
checked against that.
"""

from __future__ import annotations

import random
import re
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from google.protobuf import message as pb_message

from battleline.v1 import lobby_pb2, record_pb2, types_pb2
from battleline_engine.model import series_game_seed
from battleline_rules import (
    ClaimTiming,
    GameState,
    Options,
    card_name,
    new_game,
    next_first_player,
    parse_action,
)

from .harness import Client, Engine, Played, play_local

MATCHES = 210
Part = tuple[int, pb_message.Message]


def strings(msg: pb_message.Message) -> Iterator[str]:
    """Every string in a message, recursively (match ids left out: random, not secret)."""
    for fd, value in msg.ListFields():
        if fd.name == "match_id":
            continue
        values = value if fd.is_repeated else [value]
        for v in values:
            if isinstance(v, pb_message.Message):
                yield from strings(v)
            elif isinstance(v, str):
                yield v


def tokens(msg: pb_message.Message) -> set[str]:
    out: set[str] = set()
    for text in strings(msg):
        out.update(re.split(r"[^A-Za-z0-9?]+", text))
    return out


def parts(msg: pb_message.Message) -> list[Part]:
    """The pieces of a response, each with the match version it shows."""
    out: list[Part] = []
    if isinstance(msg, record_pb2.GetRecordResponse) and msg.complete:
        return out  # the match is over: a complete record reveals everything
    for name in ("view", "snapshot", "event"):
        if msg.DESCRIPTOR.fields_by_name.get(name) and msg.HasField(name):
            sub = getattr(msg, name)
            out.append((sub.version, sub))
    events = list(getattr(msg, "events", []))
    out.extend((event.version, event) for event in events)
    if isinstance(msg, record_pb2.GetRecordResponse) and events:
        out.append((events[-1].version, record_pb2.GetRecordResponse(position=msg.position)))
    return out


@dataclass
class Secrets:
    """What seat 0, seat 1 and a spectator may not see (index 0, 1, 2): after each
    version (what a view shows) and after each event (what an event shows: the last
    play of a series game shares its version with the next deal, whose decks hold the
    same card names), and the version at which the match ended."""

    by_version: dict[int, list[set[str]]] = field(default_factory=dict)
    by_event: dict[int, list[set[str]]] = field(default_factory=dict)
    end: int = 0

    def of(self, version: int, part: pb_message.Message) -> list[set[str]]:
        if isinstance(part, types_pb2.MatchEvent):
            return self.by_event[part.number]
        return self.by_version[version]


def secrets_of(record: object, series_seed: int | None = None) -> Secrets:
    """Replay the revealed record. A series is replayed game by game from the seed chosen
    for it (`series_seed`)."""
    o = record.options  # type: ignore[attr-defined]
    timing = (ClaimTiming.START_OF_TURN if o.claim_timing == types_pb2.CLAIM_TIMING_START_OF_TURN
              else ClaimTiming.AFTER_PLAY)

    def deal(game: int, first: int) -> GameState:
        seed = (record.seed if series_seed is None  # type: ignore[attr-defined]
                else series_game_seed(series_seed, game))
        return new_game(o.ruleset, Options(timing, o.hand_size or None, first), seed)

    game, state = 1, deal(1, 0)
    first_seed = state.seed  # a series' own: every game's deal follows from it
    out = Secrets()

    def snapshot() -> list[set[str]]:
        hidden = [card_name(c) for c in state.decks[0] + state.decks[1] + state.removed]
        hands = [{card_name(c) for c in h} for h in state.hands]
        returned = [{card_name(c) for c in r} for r in state.returned]
        common = set(hidden) | {str(state.seed), str(first_seed)}
        return [
            (common | hands[1]) - returned[0],
            (common | hands[0]) - returned[1],
            common | hands[0] | hands[1],
        ]

    for event in record.events:  # type: ignore[attr-defined]
        if event.kind == types_pb2.EVENT_KIND_ACTION:
            words = event.text.split()
            if words[0] in ("draw", "scout-draw") and len(words) == 3:
                words = words[:2]
            state.apply(parse_action(" ".join(words)))
        elif event.kind == types_pb2.EVENT_KIND_GAME_STARTED and int(event.text.split()[1]) > game:
            game += 1
            state = deal(game, next_first_player(state))
        out.by_event[event.number] = out.by_version[event.version] = snapshot()
        out.end = event.version
    return out


def check(seen: list[tuple[int, Part, str]], secrets: Secrets) -> int:
    checked = 0
    for who, (version, part), source in seen:
        if version >= secrets.end:
            continue  # the match is over: everything may be revealed
        leaked = tokens(part) & secrets.of(version, part)[who]
        assert not leaked, f"viewer {who} saw {leaked} at version {version} in {source}: {part}"
        checked += 1
    return checked


@dataclass
class Observed:
    """Every message part a client received, with whose it was (0, 1: a seat, by its
    token; 2: a spectator, no token). `sink` is the client's, `created` learns the tokens."""

    seen: list[tuple[int, Part, str]] = field(default_factory=list)
    owner: dict[str | None, int] = field(default_factory=lambda: {None: 2})

    def sink(self, token: str | None, msg: pb_message.Message) -> None:
        self.seen.extend((self.owner[token], p, type(msg).__name__) for p in parts(msg))

    def created(self, response: lobby_pb2.CreateMatchResponse) -> None:
        self.owner[response.seat_token] = 0
        self.owner[response.other_seat_token] = 1


@pytest.mark.timeout(600)
def test_no_secret_reaches_a_seat_or_a_spectator(redis_url: str) -> None:
    engine = Engine(redis_url)
    try:
        observed = Observed()
        client = Client.to(engine.address, sink=observed.sink)
        rng = random.Random(2024)
        rulesets = ["standard", "basic", "deck52"]
        totals: dict[str, int] = defaultdict(int)
        started = time.monotonic()
        for i in range(MATCHES):
            ruleset = rulesets[i % 3]
            timing = (types_pb2.CLAIM_TIMING_START_OF_TURN if i % 5 == 4
                      else types_pb2.CLAIM_TIMING_AFTER_PLAY)
            observed.seen.clear()
            stream_parts: list[Part] = []
            ready: dict[str, str] = {}
            watched = i % 4 == 0

            def spectate(box: dict[str, str] = ready, into: list[Part] = stream_parts) -> None:
                while "id" not in box:
                    time.sleep(0.001)
                for item in client.watch(box["id"], None, include_views=True):
                    into.extend(parts(item))

            def created(response: lobby_pb2.CreateMatchResponse,
                        box: dict[str, str] = ready) -> None:
                observed.created(response)
                box["id"] = response.match_id

            watcher = threading.Thread(target=spectate) if watched else None
            if watcher is not None:
                watcher.start()
            def records(p: Played) -> None:  # live records, for a seat and a spectator
                if p.requests % 20 == 10:
                    client.get_record(p.match_id, p.tokens[p.requests % 40 // 20])
                    client.get_record(p.match_id, None)

            played = play_local(client, ruleset, rng, batch=i % 7 != 0, on_create=created,
                                on_step=records, auto_claim=i % 3 != 2, claim_timing=timing)
            client.view(played.match_id, None)  # a spectator's view, at the end
            if watcher is not None:
                watcher.join(30)
                assert not watcher.is_alive()
            before_record = list(observed.seen)
            record = client.get_record(played.match_id)  # revealed: not checked
            assert record.complete
            secrets = secrets_of(record)
            totals["messages"] += check(before_record, secrets)
            totals["stream"] += check([(2, p, "Watch") for p in stream_parts], secrets)
            totals["requests"] += played.requests
        print(f"leak test: {MATCHES} matches, {dict(totals)}, "
              f"{time.monotonic() - started:.1f} s")
        assert totals["stream"] > 0 and totals["messages"] > 10 * MATCHES
    finally:
        engine.close()


SERIES = 12


@pytest.mark.timeout(600)
def test_no_secret_reaches_a_seat_or_a_spectator_in_a_series(redis_url: str) -> None:
    """The same over series of three games: each new deal, the next game's first player
    and the carried score must not open a window on the other hand or the decks (the
    single-match scan checks only first games)."""
    engine = Engine(redis_url)
    try:
        observed = Observed()
        client = Client.to(engine.address, sink=observed.sink)
        rng = random.Random(2025)
        checked = games = 0
        for i in range(SERIES):
            observed.seen.clear()
            seed = rng.getrandbits(40)
            played = play_local(client, ("standard", "deck52")[i % 2], rng,
                                on_create=observed.created, series_games=3, seed=seed,
                                on_step=lambda p: client.view(p.match_id, None))
            record = client.get_record(played.match_id)
            assert record.complete
            checked += check(observed.seen, secrets_of(record, series_seed=seed))
            games += sum(e.kind == types_pb2.EVENT_KIND_GAME_STARTED for e in record.events)
        print(f"series leak test: {SERIES} series, {games} games, {checked} messages")
        assert games > 2 * SERIES and checked > 100 * SERIES
    finally:
        engine.close()
