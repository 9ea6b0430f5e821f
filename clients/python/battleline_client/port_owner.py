"""Who listens on a loopback port: a seat's token goes only to an engine run by this user
(or by root, who may read everything anyway).

Why: on a shared machine any local user may bind 127.0.0.1:50051 while the player's own
`battleline serve` is down, and `battleline play` sent whatever answered there the
tokens of the games it kept for --resume: that user could then read the player's hand
and move for them (twenty-seventh audit). Linux names a listening socket's owner in
/proc/net/tcp and tcp6; elsewhere, or for a host that is not loopback, nothing is known
and nothing is refused.
"""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path

from .common import host_and_port

LISTEN = "0A"  # the kernel's TCP_LISTEN, as /proc/net/tcp writes a socket's state
ANY_V4 = ipaddress.IPv4Address("0.0.0.0")
ANY_V6 = ipaddress.IPv6Address("::")
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def _listeners(proc_net: Path) -> list[tuple[Address, int, int]]:
    """(address, port, uid) of every listening TCP socket /proc tells of."""
    found: list[tuple[Address, int, int]] = []
    for name in ("tcp", "tcp6"):
        try:
            lines = (proc_net / name).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 8 or fields[3] != LISTEN:
                continue
            address_hex, port_hex = fields[1].split(":")
            raw = bytes.fromhex(address_hex)  # 32-bit words, each in the host's byte order
            words = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
            address = ipaddress.ip_address(words)
            found.append((address, int(port_hex, 16), int(fields[7])))
    return found


def _reached_by(host: str) -> set[Address] | None:
    """The listening addresses a connection to loopback `host` may land on (its own, the
    wildcards, IPv4 through a dual-stack IPv6 socket); None if `host` is not loopback."""
    if host == "localhost":
        return (_reached_by("127.0.0.1") or set()) | (_reached_by("::1") or set())
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return None
    if not address.is_loopback:
        return None
    if isinstance(address, ipaddress.IPv4Address):
        return {address, ANY_V4, ANY_V6, ipaddress.IPv6Address(f"::ffff:{address}")}
    return {address, ANY_V6}


def listening_uids(target: str, proc_net: Path = Path("/proc/net")) -> set[int]:
    """The uids owning the sockets that listen where a connection to the loopback
    `target` (`HOST:PORT`) may land; empty when `target` is not loopback or this system
    does not tell."""
    parsed = host_and_port(target)
    if parsed is None:
        return set()
    host, port = parsed
    reached = _reached_by(host)
    if reached is None:
        return set()
    return {uid for address, bound_port, uid in _listeners(proc_net)
            if bound_port == port and address in reached}


def strangers(uids: set[int], engine_uid: int | None = None) -> set[int]:
    """Those of `uids` that are neither this user, nor root, nor `engine_uid` (the user
    whose engine issued the token, where it was known)."""
    return uids - {os.geteuid(), 0, engine_uid}
