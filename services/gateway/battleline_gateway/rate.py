"""The web port's request rate per client address, counted before a request's body is read.

Reading and decoding even a body that is then refused cost this process's event loop
(the engine's, under `battleline serve`) up to 0.4 ms a KiB, with nothing bounding how
often one client asked: a flood of 8 KiB bodies took GetView on the engine's gRPC port
from a few ms to over 100 ms. The engine's own per-client limits only apply once a call
reaches it.
"""

from __future__ import annotations

from collections.abc import Sequence

from battleline_engine.auth import Callers, address_key
from battleline_engine.errors import Refusal
from battleline_engine.ratelimit import Rate, RateLimiter


class RequestRate:
    """Requests of each client address (an IPv6 client: its /64) against `rate`.

    The address is the connection's peer or, from a configured proxy, the browser's
    address uvicorn read from its x-forwarded-for: the one the bridge forwards to the
    engine. A proxy's own requests are not counted: behind it every browser has its own
    budget, as with the per-address connection cap.
    """

    def __init__(self, rate: Rate, trusted_proxies: Sequence[str]) -> None:
        self.limiter = RateLimiter(rate, "web requests")
        self.proxies = Callers(trusted_proxies)

    def over(self, host: str | None) -> Refusal | None:
        """Count one request of `host`; the engine's refusal (RESOURCE_EXHAUSTED, reason
        rate-limited, with the delay to retry after) if it is past the rate."""
        if host is None or self.proxies.is_trusted_proxy(host):
            return None
        try:
            self.limiter.take(address_key(host))
        except Refusal as refusal:
            return refusal
        return None
