"""A --host the servers cannot bind is refused before anything starts, saying why.

gRPC reads no shorthand IPv4 address (`127.1`, `0x7f.1`; the system's resolver does) and
found no `localhost.`: serve started its embedded Redis, gRPC printed a line of its
internals, and serve blamed another program for the port (the twenty-ninth audit's
re-test)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from battleline_client.cli import app
from battleline_host.commands.options import bindable_host

COMMANDS = [["serve", "--host"], ["serve", "--metrics-host"], ["web", "--host"],
            ["ai", "--host"]]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
@pytest.mark.parametrize(("host", "why"), [
    ("127.1", "write the address in full (127.0.0.1), not 127.1"),
    ("0x7f.1", "write the address in full (127.0.0.1), not 0x7f.1"),
    ("localhost.", "no address found for 'localhost.'"),
    ("no-such-host.invalid", "no address found for 'no-such-host.invalid'"),
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
