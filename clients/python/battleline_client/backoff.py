"""The one retry policy: whatever waits and tries again (a client reconnecting, the
engine's event reader and the AI worker while Redis is away, the AI service
restarting a worker that keeps crashing) waits these delays.

No imports beyond the standard library, so the engine's domain and the AI use it
without loading the client's gRPC side.
"""

from __future__ import annotations

import random
from collections.abc import Iterator


def backoff(initial_s: float = 0.1, max_s: float = 5.0, factor: float = 2.0) -> Iterator[float]:
    """Delays growing from `initial_s` by `factor` up to `max_s`, each drawn at random
    below its bound (full jitter), so many waiters do not retry in step. Start a new
    iterator once a try succeeds."""
    bound = initial_s
    while True:
        yield random.uniform(0, bound)
        bound = min(max_s, bound * factor)
