"""Who the engine and the AI worker may send the store's password and data to over TCP:
a Redis on this machine run by this user, by root, or by the user whose Redis the first
connection to that port met.

Why: redis-py and FastRedis reconnect on their own after a Redis restarts, and their
first words on a new connection are AUTH with the password. Another local user who took
a loopback port in that moment was sent the password (and then every match's state):
the twenty-ninth audit's "Left". The check reads who accepted the connection once it is
made and before anything is sent (`tcp_table.peer_uid`), so no one can take the port
between the check and the connection. A Redis elsewhere is not on this machine's /proc
and is left to TLS (`rediss://`), as a unix socket is to its directory's permissions.
"""

from __future__ import annotations

import asyncio
import os
import socket
from pathlib import Path

import redis.exceptions

from battleline_client.tcp_table import UNHELD, peer_uid


class ListenerPin:
    """The owner first met at each Redis port, and the check of every later connection
    against it. One per store client: every connection of its pools and its lean
    connection share it."""

    def __init__(self, proc_net: Path = Path("/proc/net")) -> None:
        self.proc_net = proc_net
        # port: the uid met there first. By port, not address: `localhost` may go to ::1
        # one time and to 127.0.0.1 the next, each taken by a different user.
        self.owners: dict[int, int] = {}

    def admit(self, transport: asyncio.WriteTransport) -> None:
        """`check` a connection just made, and abort it (nothing sent) if refused."""
        try:
            self.check(transport.get_extra_info("socket"))
        except redis.exceptions.ConnectionError:
            transport.abort()
            raise

    def check(self, connection: socket.socket | None) -> None:
        """Raise ConnectionError (the store unreachable: callers retry, and answer
        UNAVAILABLE meanwhile) if a process of another user than this one, root, or the
        one met first at that port accepted `connection`. Nothing has been sent on it
        yet; the caller closes it."""
        if connection is None or connection.family not in (socket.AF_INET, socket.AF_INET6):
            return
        try:
            host, port = connection.getpeername()[:2]
            uid = peer_uid(connection, self.proc_net)
        except OSError as err:  # reset meanwhile
            raise redis.exceptions.ConnectionError(f"connection to Redis lost: {err}") from err
        if uid is None:  # elsewhere, or /proc tells nothing
            return
        if uid == UNHELD:
            raise redis.exceptions.ConnectionError(
                f"not sent: no process holds the connection to Redis at {host}:{port} yet "
                f"(a listener whose queue is full: who it is cannot be told)")
        first = self.owners.setdefault(port, uid)
        if uid not in (first, os.getuid(), 0):
            raise redis.exceptions.ConnectionError(
                f"not sent: a process of another user (uid {uid}) accepted the connection "
                f"to Redis at {host}:{port}, not the Redis first met at that port (uid "
                f"{first}); nothing was sent to it")
