"""What Linux's /proc/net/tcp and tcp6 tell of this machine's TCP sockets: who listens at
a port, and who holds the other end of a connection made from here. No gRPC here: the
engine's storage checks its Redis connections with it (`peer_uid`), and the storage layer
imports no gRPC; `port_owner` builds the channels' checks on it."""

from __future__ import annotations

import ipaddress
import socket
import sys
import time
from pathlib import Path

LISTEN = "0A"  # the kernel's TCP_LISTEN, as /proc/net/tcp writes a socket's state
UNHELD = -1  # `peer_uid`: a connection to this machine that no socket holds
UNHELD_READS = 3  # readings of /proc (1 ms apart) before a connection counts as unheld
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def sockets_at(proc_net: Path, port: int) -> list[tuple[Address, int, bool]] | None:
    """(address, uid, listening) of every TCP socket bound at `port`, listening or not
    (one a listener accepted is bound where the listener was); None if /proc tells
    nothing."""
    rows = _rows(proc_net, port)
    if rows is None:
        return None
    found: list[tuple[Address, int, bool]] = []
    for fields in rows:
        address, bound_port = endpoint(fields[1])
        if bound_port == port:  # else the marker was the other end's port
            found.append((address, int(fields[7]), fields[3] == LISTEN))
    return found


def _rows(proc_net: Path, port: int) -> list[list[str]] | None:
    """The fields of each line of /proc/net/tcp6, then tcp, with `port` at either end;
    None if /proc tells nothing. Lines of other ports are passed over unsplit: a machine
    with 50,000 sockets made each check of a game's calls take 0.35 s."""
    rows: list[list[str]] = []
    told, marker = False, f":{port:04X} "
    for name in ("tcp6", "tcp"):  # in this order: see `port_owner._plain_owners`
        try:
            lines = (proc_net / name).read_text().splitlines()[1:]
        except OSError:
            continue
        told = True
        rows += [fields for line in lines
                 if marker in line and len(fields := line.split()) >= 8]
    return rows if told else None


def endpoint(field: str) -> tuple[Address, int]:
    """An address and port as /proc/net/tcp writes them: 32-bit words, each in the host's
    byte order, then the port, in hex."""
    address_hex, port_hex = field.split(":")
    raw = bytes.fromhex(address_hex)
    words = raw if sys.byteorder == "big" else b"".join(
        raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    return ipaddress.ip_address(words), int(port_hex, 16)


def unmapped(address: Address) -> Address:
    """IPv4 as itself, however a dual-stack socket writes it (::ffff:127.0.0.1)."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def peer_uid(connection: socket.socket, proc_net: Path = Path("/proc/net")) -> int | None:
    """The owner of the socket at the other end of `connection` (TCP, made from here) when
    that end is on this machine too; `UNHELD` when it is, but no socket holds it; None
    when it is elsewhere, or /proc does not tell.

    Read once connected and before anything is sent, it names who will read what is sent,
    with no instant between the check and the connection for another user to take the
    port in (a check before connecting leaves one: the twenty-ninth audit's re-test). The
    kernel names a connection a listener accepted (or holds in its queue) after the
    listener's owner. One whose queue was full answered with a SYN cookie: the
    connection is made, and nothing holds it until data comes (a re-test's squatter got
    past a check that let that pass)."""
    ours, theirs = connection.getsockname(), connection.getpeername()
    peer = socket_address(theirs[0])
    if not is_here(peer):
        return None
    wanted = ((peer, theirs[1]), (socket_address(ours[0]), ours[1]))
    for attempt in range(UNHELD_READS):
        if attempt:
            time.sleep(0.001)  # the listener's side of a connection just made
        rows = _rows(proc_net, theirs[1])
        if rows is None:
            return None
        for fields in rows:
            (local, local_port), (remote, remote_port) = map(endpoint, fields[1:3])
            if ((unmapped(local), local_port), (unmapped(remote), remote_port)) == wanted:
                return int(fields[7])
    return UNHELD


def is_here(address: Address) -> bool:
    """Whether `address` is this machine's: loopback, unspecified (a connection to it
    goes to loopback), or one of its interfaces' (the kernel routes to it from itself,
    as its own source address; binding would not tell, under ip_nonlocal_bind)."""
    address = unmapped(address)  # not loopback to Python 3.11 (::ffff:127.0.0.2)
    if address.is_loopback or address.is_unspecified:
        return True
    family = socket.AF_INET if address.version == 4 else socket.AF_INET6
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as probe:
            probe.connect((str(address), 9))  # UDP: routes, sends nothing
            source = probe.getsockname()[0]
    except OSError:  # no route, or no such family on this host
        return False
    return socket_address(str(source)) == address


def socket_address(text: str) -> Address:
    """An address as a socket names it (an IPv6 one may carry a %scope), unmapped."""
    return unmapped(ipaddress.ip_address(text.split("%")[0]))
