"""Token buckets per key (peer address or seat), and counts of what each key holds open,
in process memory.

Per replica: N replicas allow N times the rate, which is acceptable for
abuse protection (the point is to stop floods, not to meter precisely) and
costs no Redis round trip on the hot path.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from .errors import Kind, Refusal

C = TypeVar("C")


@dataclass(frozen=True, slots=True)
class Rate:
    """`per_s` tokens a second, up to `burst` saved."""

    per_s: float
    burst: float


def delay_text(seconds: float) -> str:
    """A retry delay as a person reads it: a bucket short of a sliver of a token says
    "2 ms", not "0.00 s" (which read as "retry now" and was not)."""
    ms = round(seconds * 1000)
    return f"{max(1, ms)} ms" if ms < 1000 else f"{seconds:.1f} s"


class RateLimiter:
    """Refuses with RESOURCE_EXHAUSTED (and RetryInfo) once a key's bucket is empty."""

    def __init__(self, rate: Rate, what: str, max_keys: int = 100_000,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = rate
        self.what = what
        self.max_keys = max_keys
        self._clock = clock  # seconds; a test passes its own
        self._buckets: dict[str, tuple[float, float]] = {}  # key -> (tokens, at)

    def take(self, key: str, cost: float = 1.0) -> None:
        """Spend `cost` tokens of `key` (one call, or a call's share of a dearer resource:
        seconds of search), or raise the refusal saying when to retry."""
        now = self._clock()
        tokens, at = self._buckets.get(key, (self.rate.burst, now))
        tokens = min(self.rate.burst, tokens + (now - at) * self.rate.per_s)
        if tokens < cost:
            wait = (cost - tokens) / self.rate.per_s
            self._buckets[key] = (tokens, now)
            raise Refusal(Kind.EXHAUSTED, "rate-limited",
                          f"too many {self.what}: retry in {delay_text(wait)}",
                          retry_after_s=wait)
        self._buckets[key] = (tokens - cost, now)
        if len(self._buckets) > self.max_keys:
            self._prune(now)

    def refund(self, key: str, cost: float = 1.0) -> None:
        """Give back `cost` tokens taken for something that turned out not to count (a
        lookup that found what it looked for)."""
        found = self._buckets.get(key)
        if found is not None:
            self._buckets[key] = (min(self.rate.burst, found[0] + cost), found[1])

    def _prune(self, now: float) -> None:
        """Forget buckets that have refilled; if most are still recent (many addresses at
        once), forget the least recently used down to half the table, so the next prune
        is `max_keys` / 2 calls away instead of on every call. A forgotten key only gets
        a full bucket back, which its owner could have had from another address."""
        full_after = self.rate.burst / self.rate.per_s
        kept = {k: v for k, v in self._buckets.items() if now - v[1] < full_after}
        if len(kept) > self.max_keys // 2:
            newest = sorted(kept.items(), key=lambda item: item[1][1])[-(self.max_keys // 2):]
            kept = dict(newest)
        self._buckets = kept


class OpenCounts:
    """What each key holds open now (streams, connections), for a cap on it. Callers check
    `full` and `take` with no await in between, so concurrent opens cannot all pass the
    check before any is counted; a key holding nothing is forgotten, so keys come and go
    without the table growing."""

    def __init__(self) -> None:
        self._open: Counter[str] = Counter()

    def __bool__(self) -> bool:
        return bool(self._open)

    def full(self, key: str, cap: int) -> bool:
        return self._open[key] >= cap

    def take(self, *keys: str) -> None:
        self._open.update(keys)

    def release(self, *keys: str) -> None:
        self._open.subtract(keys)
        for key in keys:
            if self._open[key] <= 0:
                del self._open[key]


class HeldConnections(Generic[C]):
    """The connections each key (a client address) holds, oldest first, against a cap.

    A key at its cap still gets a new connection if one of its own is `waiting` for its
    request: the oldest such gives way (`close`d). Why: several local users share the
    loopback key, and a cap that refused the newcomer let one of them hold every place
    with connections that never send a request (tenth audit: 0 of 48 page loads, 0 of 24
    scrapes); a connection whose request is in, or whose answer streams, is never taken.
    Not thread-safe: callers on threads take their own lock."""

    def __init__(self, cap: int, waiting: Callable[[C], bool],
                 close: Callable[[C], None]) -> None:
        self.cap = cap
        self._waiting = waiting
        self._close = close
        self._held: dict[str, list[C]] = {}

    def take(self, key: str, connection: C) -> bool:
        """Count `connection` for `key`; False (not counted) when the key is full of
        connections whose requests are in."""
        held = self._held.setdefault(key, [])
        if len(held) >= self.cap:
            idle = next((c for c in held if self._waiting(c)), None)
            if idle is None:
                return False
            held.remove(idle)
            self._close(idle)
        held.append(connection)
        return True

    def release(self, key: str, connection: C) -> None:
        """Forget a closed connection (one that gave way is forgotten already)."""
        held = self._held.get(key)
        if held is not None and connection in held:
            held.remove(connection)
            if not held:
                del self._held[key]
