"""Token buckets per key (peer address or seat), and counts of what each key holds open,
in process memory.

Per replica: N replicas allow N times the rate, which is acceptable for
abuse protection (the point is to stop floods, not to meter precisely) and
costs no Redis round trip on the hot path.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass

from .errors import Kind, Refusal


@dataclass(frozen=True, slots=True)
class Rate:
    """`per_s` tokens a second, up to `burst` saved."""

    per_s: float
    burst: float


class RateLimiter:
    """Refuses with RESOURCE_EXHAUSTED (and RetryInfo) once a key's bucket is empty."""

    def __init__(self, rate: Rate, what: str, max_keys: int = 100_000) -> None:
        self.rate = rate
        self.what = what
        self.max_keys = max_keys
        self._buckets: dict[str, tuple[float, float]] = {}  # key -> (tokens, at)

    def take(self, key: str, cost: float = 1.0) -> None:
        """Spend `cost` tokens of `key` (one call, or a call's share of a dearer resource:
        seconds of search), or raise the refusal saying when to retry."""
        now = time.monotonic()
        tokens, at = self._buckets.get(key, (self.rate.burst, now))
        tokens = min(self.rate.burst, tokens + (now - at) * self.rate.per_s)
        if tokens < cost:
            wait = (cost - tokens) / self.rate.per_s
            self._buckets[key] = (tokens, now)
            raise Refusal(Kind.EXHAUSTED, "rate-limited",
                          f"too many {self.what}: retry in {wait:.2f} s", retry_after_s=wait)
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
