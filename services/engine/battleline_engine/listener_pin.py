"""Who the engine and the AI worker may send the store's password and data to over TCP:
a Redis on this machine run by this user, by root, or by the user Redis runs as (the
operator's `--redis-owner`, else whoever held its port when `serve` or `battleline ai`
started, passed on to the processes they start; else the first met at that port).

Why: redis-py and FastRedis reconnect on their own after a Redis restarts, and their
first words on a new connection are AUTH with the password. Another local user who took
a loopback port in that moment was sent the password (and then every match's state):
the twenty-ninth audit's "Left". The check reads who accepted the connection once it is
made and before anything is sent (`tcp_table.peer_uid`; over TLS, once the handshake is
done and before AUTH), so no one can take the port between the check and the
connection. A Redis elsewhere is not on this machine's /proc and is left to TLS
(`rediss://`), as a unix socket is to its directory's permissions.

The processes serve starts and restarts are told the owner it knows, rather than each
meeting its own first: a worker restarted while Redis was down and another user held its
port trusted that user (the twenty-ninth audit's re-test). `battleline ai` run apart, or
a serve that starts other processes, started while no one holds Redis's port, starts them
once someone does, and tells them and every restart that user (`decided_redis_owner`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from pathlib import Path
from urllib.parse import urlsplit

import redis.exceptions

from battleline_client.tcp_table import UNHELD, is_here, peer_uid, socket_address

log = logging.getLogger(__name__)


class OwnerUnknown(Exception):
    """Redis's port is on this machine, but whom to trust there cannot be told now."""


def redis_owner(url: str, proc_net: Path = Path("/proc/net")) -> int | None:
    """Who holds the TCP port of the Redis at `url` (TLS or not) on this machine now,
    found without sending it anything (a connection made and closed); None for a Redis
    elsewhere or on a unix socket, or none to be told (each process then keeps to the
    first it meets)."""
    try:
        return held_redis_owner(url, proc_net)
    except OwnerUnknown:
        return None


def held_redis_owner(url: str, proc_net: Path = Path("/proc/net")) -> int | None:
    """`redis_owner`, for a caller that waits to decide the owner once: OwnerUnknown
    (why, in its message) while nothing listens at the port, or, on this machine, while
    who does cannot be named (a full queue, no answer). A squatter that filled its queue
    while `battleline ai` started was taken for a Redis elsewhere, and every worker was
    left to trust the first it met (a re-test)."""
    parts = urlsplit(url.replace("+cluster", "", 1))
    if parts.scheme.lower() not in ("redis", "rediss"):
        return None
    where = (parts.hostname or "localhost", parts.port or 6379)
    try:
        found = socket.getaddrinfo(*where, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):  # no such name: each process says so as it connects
        return None
    here = any(is_here(socket_address(str(info[4][0]))) for info in found)
    try:
        with socket.create_connection(where, timeout=5) as probe:
            uid = peer_uid(probe, proc_net)
    except ConnectionRefusedError:
        raise OwnerUnknown("nothing listens at its port") from None
    except (OSError, ValueError) as err:
        if here:
            raise OwnerUnknown(f"no answer at its port: {err}") from None
        return None
    if uid == UNHELD:
        raise OwnerUnknown("who holds its port cannot be told: its queue is full")
    return uid


async def decided_redis_owner(url: str, stop: asyncio.Event, starting: str) -> int | None:
    """Who holds Redis's port (`held_redis_owner`), waited for while no one there can be
    told: decided once, before `starting` (the processes a command runs) start, and passed
    to each of them and each restart; None for a Redis elsewhere, or when `stop` came
    first. Each started without an owner trusted the first it met, and one restarted while
    another user held the port sent that user the password (the twenty-ninth audit's
    "Left")."""
    said = False
    while not stop.is_set():
        try:
            return await asyncio.to_thread(held_redis_owner, url)
        except OwnerUnknown as why:
            if not said:
                log.warning("cannot reach Redis (%s): %s start once who holds its port can "
                            "be told, and send the password to that user alone", why, starting)
                said = True
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.5)
    return None


class ListenerPin:
    """The user Redis runs as, and the check of every connection against it. One per
    store client: every connection of its pools and its lean connection share it."""

    def __init__(self, owner: int | None = None, proc_net: Path = Path("/proc/net")) -> None:
        """`owner`: the uid Redis runs as, at every port (`redis_owner`); None: the first
        met at each port."""
        self.owner = owner
        self.proc_net = proc_net
        # port: the uid met there first. By port, not address: `localhost` may go to ::1
        # one time and to 127.0.0.1 the next, each taken by a different user.
        self.owners: dict[int, int] = {}

    def known_owner(self) -> int | None:
        """Redis's owner as given, else the one user met at every port so far (None: none
        yet, or several): what a process started now should keep to."""
        if self.owner is not None:
            return self.owner
        met = set(self.owners.values())
        return met.pop() if len(met) == 1 else None

    def admit(self, transport: asyncio.WriteTransport) -> None:
        """`check` a connection just made, and abort it (nothing sent) if refused."""
        try:
            self.check(transport.get_extra_info("socket"))
        except redis.exceptions.ConnectionError:
            transport.abort()
            raise

    def check(self, connection: socket.socket | None) -> None:
        """Raise ConnectionError (the store unreachable: callers retry, and answer
        UNAVAILABLE meanwhile) if a process of another user than this one, root, or
        Redis's owner accepted `connection`. Nothing has been sent on it
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
        owner = self.owner if self.owner is not None else self.owners.setdefault(port, uid)
        if uid not in (owner, os.getuid(), 0):
            raise redis.exceptions.ConnectionError(
                f"not sent: a process of another user (uid {uid}) accepted the connection "
                f"to Redis at {host}:{port}, not Redis's owner (uid {owner}); nothing was "
                f"sent to it")
