"""One HTTP request on a connection of its own, as it is: the gateway tests' way to send
what a Connect client would not (odd headers, raw bodies, any method)."""

from __future__ import annotations

import http.client
from urllib.parse import urlsplit


def request(url: str, method: str, path: str, body: bytes | None = None,
            headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    """The status, the headers (names in lower case) and the body of the answer."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        return (response.status, {k.lower(): v for k, v in response.getheaders()},
                response.read())
    finally:
        connection.close()
