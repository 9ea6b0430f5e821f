"""Headers every answer of the web port carries (tenth audit, F5): before them any site
could frame the page and lure a click onto Resign, nothing limited what the page may
load, and the answers carrying seat tokens did not say they must not be cached."""

from __future__ import annotations

import json
import re

from battleline_gateway.site import SITE_DIR

from .plain_http import request

CREATE = "/battleline.v1.LobbyService/CreateMatch"


def _assert_guarded(headers: dict[str, str]) -> None:
    policy = headers["content-security-policy"]
    assert "frame-ancestors 'none'" in policy and "default-src 'self'" in policy, policy
    assert headers["x-frame-options"] == "DENY"
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "no-referrer"
    assert headers["cross-origin-opener-policy"] == "same-origin"  # fifteenth audit


def test_the_page_its_files_and_a_missing_file_forbid_framing(gateway: str) -> None:
    status, headers, page = request(gateway, "GET", "/")
    assert status == 200 and b"<script" in page
    _assert_guarded(headers)
    asset = re.search(rb'src="\./(assets/[^"]+\.js)"', page)
    assert asset is not None and (SITE_DIR / asset.group(1).decode()).is_file()
    status, headers, _ = request(gateway, "GET", "/" + asset.group(1).decode())
    assert status == 200
    _assert_guarded(headers)
    status, headers, _ = request(gateway, "GET", "/no-such-file.js")
    assert status == 404
    _assert_guarded(headers)


def test_an_answer_carrying_a_seat_token_is_kept_by_no_cache(gateway: str) -> None:
    create = {"options": {"ruleset": "standard"}, "opponent": {"kind": "OPPONENT_KIND_LOCAL"}}
    status, headers, body = request(gateway, "POST", CREATE, json.dumps(create).encode(),
                                    {"content-type": "application/json"})
    assert status == 200 and json.loads(body)["seatToken"], body[:200]
    assert headers["cache-control"] == "no-store"
    _assert_guarded(headers)
    status, headers, _ = request(gateway, "POST", CREATE, b"{",
                                 {"content-type": "application/json"})
    assert status == 400 and headers["cache-control"] == "no-store"


def test_a_loopback_web_port_answers_only_to_loopback_names(gateway: str) -> None:
    """Fifteenth audit: a page of another site whose name it points at 127.0.0.1 (DNS
    rebinding) reached the loopback web port under that name: it created AI matches
    and spent the local player's budgets. Such a request gets 421, with the usual headers,
    and reaches neither the page nor the bridge."""
    create = {"options": {"ruleset": "standard"}, "opponent": {"kind": "OPPONENT_KIND_LOCAL"}}
    for host in ("rebind.evil.example", "rebind.evil.example:8080", "127.0.0.2", ""):
        for method, path, body in (("GET", "/", None),
                                   ("POST", CREATE, json.dumps(create).encode())):
            status, headers, answer = request(gateway, method, path, body, {
                "Host": host, "content-type": "application/json"})
            assert status == 421, (host, path, status, answer[:100])
            assert b"answers only to 127.0.0.1, [::1], localhost" in answer
            _assert_guarded(headers)
    port = gateway.rsplit(":", 1)[1]
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", "LOCALHOST", f"[::1]:{port}"):
        status, _, page = request(gateway, "GET", "/", None, {"Host": host})
        assert status == 200 and b"<script" in page, host
