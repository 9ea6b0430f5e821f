"""Binding a server's port, and the one error every server of the service raises when it
cannot: the engine's and the AI's gRPC ports, the web page, the metrics endpoint.

Light to import (grpc for types only): `battleline serve` reads MAX_CONNECTIONS and
MAX_CALLS for its options' defaults before it loads the engine."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    import socket

    import grpc
    import grpc.aio

# Connections the engine's gRPC port holds at once (`serve --max-connections`); more are
# closed as soon as they are accepted, so a flood cannot take the descriptors the web
# port, Redis and the clients already served need (issue #14: 20,000 of them were taken).
# Where the descriptor limit is too low for it, serve lowers the cap to fit.
MAX_CONNECTIONS = 4096
# Calls one engine process holds at once, Watch streams included (`serve --max-calls`);
# more are refused at once. What bounds half-sent requests over all connections (about
# 28 KB each): the scale benchmark holds 20,000 Watch streams.
MAX_CALLS = 32_768


def is_loopback_host(host: str) -> bool:
    """Whether a listener on `host` is reached from this machine alone: `localhost`, or an
    address that is loopback however it is written (`LOCALHOST`, `127.1`,
    `::ffff:127.0.0.1`: the text alone did not say so, twenty-sixth audit). Other names
    are not looked up (a lookup here would block the event loop, and could answer
    otherwise than the bind's own): they count as reachable from elsewhere."""
    import socket

    from battleline_client.tcp_table import socket_address

    name = unbracketed(host)
    if _is_localhost(name):
        return True
    try:
        found = socket.getaddrinfo(name, None, type=socket.SOCK_STREAM,
                                   flags=socket.AI_NUMERICHOST)
    except (OSError, UnicodeError, ValueError):
        return False
    return bool(found) and all(socket_address(str(info[4][0])).is_loopback for info in found)


# The names a loopback listener answers to (the web port, the metrics port). A page of
# another site whose name it points at 127.0.0.1 (DNS rebinding) reaches a loopback
# server under that name, and would spend the local player's budgets (fifteenth audit)
# or read the metrics (twenty-sixth): such a server answers these names only.
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "[::1]"})


def answered_names(host: str) -> frozenset[str] | None:
    """The Host names a server bound to `host` answers: on loopback, loopback's and the
    bound address's own (127.0.0.2, say); elsewhere None (any)."""
    if not is_loopback_host(host):
        return None
    return LOOPBACK_NAMES | {bracketed(host).lower()}


def host_name(header: str) -> str:
    """A Host header's name, without its port, in lower case ("" when absent)."""
    host = header.lower()
    return host if host.endswith("]") else host.rpartition(":")[0] or host


class CannotListen(OSError):
    """A server could not bind its address: the port is taken, or the host is not one
    of this machine's. Commands say so in one line rather than with a traceback."""


def bracketed(host: str) -> str:
    """`host` as it stands before a port or in a Host header: an IPv6 literal in brackets."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def unbracketed(host: str) -> str:
    """`host` as sockets take it: an IPv6 literal without its brackets (`--host [::1]`)."""
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


def host_port(host: str, port: int) -> str:
    """`host:port` as gRPC reads it: an IPv6 literal in brackets (`[::]:50051`; `:::50051`
    cannot be bound)."""
    return f"{bracketed(host)}:{port}"


def claim_shared_port(host: str, port: int, lock_dirs: Sequence[Path]) -> list[IO[bytes]]:
    """For `serve --workers N`, whose engines bind their port with SO_REUSEPORT: that
    would let a second serve's engines in beside them without a word, and an operator's
    two serves then split one port's calls between two stores (7 of 12 matches read back
    as unknown). Raise CannotListen if this user's other serve holds the port (a lock it
    keeps while it runs: two serves started at once both passed a probe alone) or some
    socket is bound there. Returns the locks, to keep open while the engines run: one in
    each of `lock_dirs` that is this user's own (another user may make a fixed name in
    /tmp first: twenty-eighth audit); none if no directory is (the probe alone guards)."""
    if port == 0:
        return []
    locks: list[IO[bytes]] = []
    try:
        for folder in lock_dirs:
            lock = _port_lock(folder, port)
            if lock is not None:
                locks.append(lock)
        refuse_if_bound(host, port)
    except CannotListen:
        for lock in locks:
            lock.close()
        raise
    return locks


def port_lock_dirs(environ: Mapping[str, str]) -> list[Path]:
    """Where `serve` keeps its port locks: a fixed name in the temporary directory (every
    serve of this user finds it, whatever its environment) and the user's runtime
    directory, $XDG_RUNTIME_DIR, where set (no other user can make a name there first)."""
    import os
    import tempfile

    folders = [Path(tempfile.gettempdir()) / f"battleline-ports-{os.geteuid()}"]
    if environ.get("XDG_RUNTIME_DIR"):
        folders.append(Path(environ["XDG_RUNTIME_DIR"]) / "battleline-ports")
    return folders


def _port_lock(folder: Path, port: int) -> IO[bytes] | None:
    """This user's lock of `port` in `folder` (sharing a SO_REUSEPORT port needs the same
    user), or None where that directory is not this user's own."""
    import fcntl
    import os
    import stat

    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        info = folder.lstat()
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
        return None
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        lock = os.fdopen(os.open(folder / f"port-{port}.lock", flags, 0o600), "r+b")
    except OSError:
        return None
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.close()
        raise CannotListen(f"cannot listen on port {port}: another serve holds it") from None
    return lock


def refuse_if_bound(host: str, port: int, *, to: str = "listen on") -> None:
    """Raise CannotListen ("cannot `to` host:port") if some socket holds `host:port`, one
    bound with SO_REUSEPORT included: a probe without it is refused while any such
    socket is bound."""
    import contextlib
    import errno
    import socket

    if port == 0:
        return
    host = unbracketed(host)  # `--host [::1]`: as a name it found nothing, and no refusal
    # gRPC binds `localhost` as both loopbacks, whatever the system's resolver says (here
    # 127.0.0.1 alone): another user on [::1] was let be, and clients of localhost sent
    # there (twenty-ninth audit). A server on one loopback holds the other too
    # (`loopback_twin`).
    twin = loopback_twin(host)
    names = (["127.0.0.1", "::1"] if _is_localhost(host)
             else [host, *([twin] if twin else [])])
    addresses = []
    for name in names:
        with contextlib.suppress(OSError):  # a host that names nothing: gRPC's bind says so
            addresses += socket.getaddrinfo(name, port, type=socket.SOCK_STREAM,
                                            flags=socket.AI_PASSIVE)
    for family, kind, proto, _, address in addresses:
        try:
            with socket.socket(family, kind, proto) as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT is free
                probe.bind(address)
        except OSError as err:  # another error (no IPv6 here...): gRPC's bind will tell
            if err.errno == errno.EADDRINUSE:
                taken = host_port(str(address[0]), port)
                beside = "" if taken == host_port(host, port) else f" ({taken} is taken)"
                raise CannotListen(f"cannot {to} {host_port(host, port)}{beside}"
                                   ) from None


def listen(server: grpc.aio.Server, address: str,
           credentials: grpc.ServerCredentials | None = None, *, shared: bool = False) -> int:
    """Bind `server` to `address` (with TLS given `credentials`); returns the port.

    A port not `shared` (SO_REUSEPORT, `serve --workers`, probed apart) is probed first:
    gRPC's own failed bind prints a line of its internals before the one we print."""
    written_host, _, number = address.rpartition(":")
    host = unbracketed(written_host)
    if not shared and not address.startswith("unix:"):
        refuse_if_bound(host, int(number))

    def bind(where: str) -> int:
        try:
            port = (server.add_insecure_port(where) if credentials is None
                    else server.add_secure_port(where, credentials))
        except RuntimeError:  # grpc: "Failed to bind to address ..."
            port = 0
        if port == 0:
            raise CannotListen(f"cannot listen on {where}")
        return port

    twin = None if address.startswith("unix:") else loopback_twin(host)
    if twin is None:
        return bind(address)
    port = bind(address) if int(number) else _bind_a_port_free_on_both(host, written_host, bind)
    bind(host_port(twin, port))  # not picked again: gRPC cannot let go of the first
    return port


def _bind_a_port_free_on_both(host: str, written_host: str, bind: Callable[[str], int]) -> int:
    """Port 0 on a loopback: a port free on it and on its twin, bound on the first. It is
    picked again when another process takes it between the pick and gRPC's bind (an
    outgoing connection's ephemeral port: a CI run's engine failed to start so)."""
    picks_left = _PORT_PICKS
    while True:
        picks_left -= 1
        sockets = bound_sockets(host, 0)
        picked = sockets[0].getsockname()[1]
        for sock in sockets:
            sock.close()
        try:
            return bind(host_port(written_host, picked))
        except CannotListen:
            if not picks_left:
                raise


# Ports tried for port 0 on a loopback and its twin: one picked free on the first may be
# another's on the twin (one CI run in four failed so, its tests holding many ports).
_PORT_PICKS = 16


def _is_localhost(host: str) -> bool:
    """`localhost` however written (any case, a trailing dot)."""
    return host.lower().rstrip(".") == "localhost"


def loopback_twin(host: str) -> str | None:
    """The other loopback, held beside the one a server is bound to (127.0.0.1 or ::1,
    however written as an address): `localhost` leads browsers and gRPC clients to ::1
    first, or to 127.0.0.1, where another local user could otherwise serve at the same
    port and be sent what was meant for this server (the web page's stored tokens: the
    twenty-ninth audit's "Left"; from ::1 to 127.0.0.1, its second re-test; a name of
    one loopback alone, as /etc/hosts may give one, its second re-test's "Left"). None
    for other hosts (gRPC binds `localhost` as both loopbacks itself), or where this
    machine lacks the other loopback."""
    import ipaddress
    import socket

    from battleline_client.tcp_table import socket_address, unmapped

    try:  # however written as an address (::ffff:127.0.0.1, a re-test)
        addresses = {unmapped(ipaddress.ip_address(host))}
    except ValueError:  # a name (/etc/hosts): the one loopback it gives alone, if so
        if _is_localhost(host):
            return None
        try:
            found = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError):
            return None
        addresses = {socket_address(str(info[4][0])) for info in found}
    address = addresses.pop() if len(addresses) == 1 else None
    twins = {ipaddress.ip_address("127.0.0.1"): ("::1", socket.AF_INET6),
             ipaddress.ip_address("::1"): ("127.0.0.1", socket.AF_INET)}
    if address not in twins:
        return None
    twin, family = twins[address]
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.bind((twin, 0))
    except OSError:
        return None
    return twin


def bound_sockets(host: str, port: int, *, to: str = "listen on") -> list[socket.socket]:
    """Sockets bound (not yet listening) to `host:port` (`localhost`: 127.0.0.1) and,
    beside a loopback, to its `loopback_twin` at the same port: for a server that
    takes its sockets made (the web page's uvicorn, the metrics port). Raises
    CannotListen ("cannot `to` host:port") if either is taken. Port 0 picks one free on
    both: the port picked on the first may be another's on the twin. (Another socket
    bound there too, with SO_REUSEADDR, that listens first makes the server's own
    `listen` fail: its caller says so in one line.)"""
    import errno
    import socket

    bare = unbracketed(host)  # `--host [::1]` (a re-test)
    where = "127.0.0.1" if _is_localhost(bare) else bare
    names = [name for name in (where, loopback_twin(where)) if name is not None]
    picks_left = _PORT_PICKS if port == 0 else 1
    while True:
        picks_left -= 1
        bound: list[socket.socket] = []
        chosen = port
        try:
            for name in names:
                sock = socket.socket(socket.AF_INET6 if ":" in name else socket.AF_INET)
                bound.append(sock)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                if name == "::1":  # IPv6 alone (`::` stays dual-stack)
                    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                sock.bind((name, chosen))
                chosen = sock.getsockname()[1]  # the one picked for port 0, the twin's too
            return bound
        except OSError as err:
            for sock in bound:
                sock.close()
            twin_taken = len(bound) > 1 and err.errno == errno.EADDRINUSE
            if not (twin_taken and picks_left):
                raise CannotListen(f"cannot {to} {host_port(name, chosen)}: "
                                   f"{err.strerror}") from None
