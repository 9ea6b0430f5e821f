"""A --host the servers cannot bind is refused before anything starts, saying why.

gRPC reads no shorthand IPv4 address (`127.1`, `0x7f.1`; the system's resolver does) and
found no `localhost.`: serve started its embedded Redis, gRPC printed a line of its
internals, and serve blamed another program for the port (the twenty-ninth audit's
re-test)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from battleline_client.cli import app
from battleline_engine import metrics_http
from battleline_host.commands.options import bindable_host

COMMANDS = [["serve", "--host"], ["serve", "--metrics-host"], ["web", "--host"],
            ["ai", "--host"]]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
@pytest.mark.parametrize(("host", "why"), [
    ("127.1", "write the address in full (127.0.0.1), not 127.1"),
    ("0x7f.1", "write the address in full (127.0.0.1), not 0x7f.1"),
    ("localhost.", "no address found for 'localhost.'"),
    ("no-such-host.invalid", "no address found for 'no-such-host.invalid'"),
    # a re-test's: gRPC's resolver failed each (the page's took the full-width ones)
    ("[::1", "'[::1': give an address"),
    ("::1]", "'::1]': give an address"),
    ("[localhost]", "'[localhost]': give an address"),
    ("\uff4c\uff4f\uff43\uff41\uff4c\uff48\uff4f\uff53\uff54", "in ASCII letters"),
    ("::1%lo", "with no scope (%)"),
    ("127.0.0.1 ", "'127.0.0.1 ': give an address"),
    ("*", "'*': give an address"),  # glibc's loopback, not gRPC's (a second re-test)
    ("192.0.2.1", "192.0.2.1 is not an address of this machine"),
    # bound without a word, and reached by no connection (a twenty-ninth audit's "Left";
    # the mapped and broadcast ones, a re-test's)
    ("224.0.0.1", "no connection reaches a server on 224.0.0.1"),
    ("ff02::1", "ff02::1 is not an address of this machine"),  # (it needs a scope)
    ("::ffff:224.0.0.1", "no connection reaches a server on ::ffff:224.0.0.1"),
    ("255.255.255.255", "no connection reaches a server on 255.255.255.255"),
    ("127.255.255.255", "no connection reaches a server on 127.255.255.255"),
])
def test_a_host_that_cannot_be_bound_is_refused_in_one_line(
        command: list[str], host: str, why: str) -> None:
    result = CliRunner().invoke(app, [*command, host])
    assert result.exit_code == 2, result.output
    assert why in result.output
    assert "in use" not in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "[::1]", "::1", "0.0.0.0", "::",
                                  "::ffff:127.0.0.1", "LOCALHOST"])
def test_addresses_and_known_names_pass(host: str) -> None:
    assert bindable_host(host) == host


def test_the_metrics_port_binds_a_bracketed_host() -> None:
    """`--metrics-host [::1]` passed the check and failed in getaddrinfo (a re-test)."""
    server = metrics_http.serve_metrics(0, "[::1]")
    try:
        assert server.server_address[0] == "::1"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(("owner", "why"), [
    ("\u00b2", "no user"),  # a digit to str.isdigit, not to int(): a traceback
    ("\u0663", "no user"),  # read as uid 3
    ("4294967295", "past the largest uid"),
])
def test_a_redis_owner_that_is_no_uid_is_refused_in_one_line(owner: str, why: str) -> None:
    result = CliRunner().invoke(app, ["serve", "--redis-owner", owner],
                                env={"REDIS_URL": "redis://127.0.0.1:1/0"})
    assert result.exit_code == 2, result.output
    assert why in result.output and "Traceback" not in result.output
