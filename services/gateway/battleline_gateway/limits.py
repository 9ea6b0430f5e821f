"""What one client may hold of the web port: a module of its own, so the commands that
take these limits as options need not load the web server to know their defaults."""

from __future__ import annotations

from dataclasses import dataclass, field

from battleline_engine.ratelimit import Rate


@dataclass(frozen=True, slots=True)
class WebLimits:
    """What one client may hold of the web port, which shares the process (and its
    descriptor limit) with the engine under `battleline serve`."""

    max_connections: int = 512  # more are closed at once: the engine keeps its descriptors
    # from one address that is not a trusted proxy, so one client cannot hold them all
    max_connections_per_address: int = 64
    # Watch streams of one such address: each holds a connection while its match lasts,
    # so at most half of them, leaving the rest for requests (a page opens one or two)
    max_streams_per_address: int = 32
    request_timeout_s: float = 10.0  # for a request's headers and body to arrive in full
    idle_timeout_s: int = 5  # a kept-alive connection with no next request is closed
    max_header_bytes: int = 16 * 1024  # a request's head: its target and headers
    max_headers: int = 100  # a browser sends about 15
    # requests (page files, calls; a Watch when opened) per address that is not a trusted
    # proxy, refused before their body is read: a browser polls and acts a few times a
    # second, and loads the page in a few requests
    request_rate: Rate = field(default_factory=lambda: Rate(per_s=20.0, burst=100.0))
