"""Who listens where a target leads on this machine: a seat's token goes back only to an
engine run by this user, by root (who may read everything anyway), or by the user whose
engine issued it; the servers' own channels (the AI's key, the web gateway's secret) go
to this user's and root's only.

Why: on a shared machine any local user may bind 127.0.0.1:50051 while the player's own
`battleline serve` is down, and `battleline play` sent whatever answered there the
tokens of the games it kept for --resume: that user could then read the player's hand
and move for them (twenty-seventh audit). Linux names a listening socket's owner in
/proc/net/tcp and tcp6, and a unix socket's owner is its file's. A host is this
machine however it is written (a name, any loopback spelling, one of its interfaces'
addresses, the unspecified address); one elsewhere, or a system that does not tell,
leaves nothing to check. A plain HOST:PORT, a `unix:` path and gRPC's `dns:`, `ipv4:`
and `ipv6:` names are followed; the other forms gRPC reads were ways past a check that
read them otherwise, and get nothing from a server's channel.
"""

from __future__ import annotations

import ipaddress
import os
import re
import socket
import stat
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import grpc
import grpc.aio
from google.rpc import error_details_pb2, status_pb2

from .errors import DETAILS_KEY, Unavailable
from .tcp_table import Address, is_here, sockets_at, unmapped

UNTRUSTED = "untrusted-listener"  # the reason of a call refused here
MAX_LINKS = 40  # links followed on the way to a socket, as the kernel's own limit
ANY_V4 = ipaddress.IPv4Address("0.0.0.0")
ANY_V6 = ipaddress.IPv6Address("::")
ANY_V4_MAPPED = ipaddress.IPv6Address("::ffff:0.0.0.0")  # IPv4's wildcard, dual-stack
LOOPBACK_V4 = ipaddress.IPv4Address("127.0.0.1")
LOOPBACK_V6 = ipaddress.IPv6Address("::1")


def _reached(address: Address, surely: bool = False) -> set[Address]:
    """The listening addresses a connection to this machine's `address` may land on: its
    own (loopback for the unspecified one), the wildcards, IPv4 on a dual-stack socket
    (its own address or wildcard written IPv4-mapped). `surely`: without IPv6's wildcard
    for an IPv4 address, which a socket with IPV6_V6ONLY (not told in /proc) never takes."""
    address = unmapped(address)
    if isinstance(address, ipaddress.IPv4Address):
        own = LOOPBACK_V4 if address.is_unspecified else address
        mapped = {ipaddress.IPv6Address(f"::ffff:{own}"), ANY_V4_MAPPED}
        return {own, ANY_V4, *mapped, *(() if surely else (ANY_V6,))}
    return {LOOPBACK_V6 if address.is_unspecified else address, ANY_V6}


# The one form checked: HOST:PORT with a name of letters, digits, dots and hyphens, an
# IPv4 address, or a bracketed IPv6 one without a scope. gRPC reads more (schemes in any
# case, percent escapes, `ipv4:///`...), each a way past a check that reads it otherwise:
# a kept token goes to none of them.
_PLAIN_TARGET = re.compile(r"(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9.-]+)):([0-9]{1,5})")


# A name of numbers only (`0127.0.0.1`, `127.1`, `0x7f000001`): the system's resolver
# reads a leading 0 as octal, gRPC's as decimal, so the two may dial different hosts.
_NUMERIC_NAME = re.compile(r"(?:0[xX][0-9a-fA-F]*|[0-9]+)(?:\.(?:0[xX][0-9a-fA-F]*|[0-9]+))*\.?")


def _addresses(host: str, port: int) -> set[Address] | None:
    """Every address gRPC may dial for `host`: a literal itself; `localhost` and names
    under it both loopbacks, as gRPC's resolver answers them (the system's may not give
    ::1); other names what the system resolves them to; None if they do not resolve, or
    are numbers the two resolvers may read differently."""
    try:
        return {ipaddress.ip_address(host)}
    except ValueError:
        pass
    if _NUMERIC_NAME.fullmatch(host):
        return None
    name = host.lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return {LOOPBACK_V4, LOOPBACK_V6}
    try:
        answers = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return None
    return {ipaddress.ip_address(str(answer[4][0]).split("%")[0]) for answer in answers}


def others_may_enter(socket_path: Path) -> bool:
    """Whether another user (neither this one nor root) could have made, or could make or
    replace, a unix socket at `socket_path`: an entry the kernel looks up on the way to
    it (each directory, each link, as it follows them, `..` included) that is missing,
    someone else's, or in a directory others may write (the socket's own at all, one
    above it without the sticky bit).

    Why: an AI service's socket in /tmp (1777) was made by another user before the AI
    started, and the engine sent it the AI's key and seats' hands (twenty-ninth audit);
    its re-tests went through another user's link (written, inside a link of ours, or
    before a `..`), flipped between its own socket and nothing, and through a directory
    named before it existed."""
    ours = {os.geteuid(), 0}
    try:  # a working directory since removed: nothing to say where a relative path leads
        written = str(socket_path if socket_path.is_absolute() else Path.cwd() / socket_path)
    except OSError:
        return True
    pending = deque(written.split("/"))
    folder, links = Path("/"), 0
    while pending:
        name = pending.popleft()
        if name in ("", "."):
            continue
        if name == "..":
            folder = folder.parent
            continue
        last = all(rest in ("", ".") for rest in pending)  # the socket itself
        try:
            around = folder.lstat()
        except OSError:
            return True
        writable = around.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
        if around.st_uid not in ours or (writable and (
                last or not around.st_mode & stat.S_ISVTX)):
            return True
        try:
            entry = (folder / name).lstat()
        except FileNotFoundError:
            return not last  # a directory not there: whoever makes it first owns it
        except OSError:
            return True
        if entry.st_uid not in ours:
            return True
        if stat.S_ISLNK(entry.st_mode):
            links += 1
            try:
                target = os.readlink(folder / name)
            except OSError:  # gone since its lstat
                return True
            if links > MAX_LINKS:
                return True
            if target.startswith("/"):
                folder = Path("/")
            pending.extendleft(reversed(target.split("/")))
        elif not last:
            if not stat.S_ISDIR(entry.st_mode):
                return True
            folder = folder / name
    return False


def unsafe_socket(socket_path: Path) -> str | None:
    """Why another user may make or replace a socket at `socket_path` (`others_may_enter`),
    in words for an operator, or None."""
    if not others_may_enter(socket_path):
        return None
    return (f"another user may make or replace the socket {socket_path} (a directory on "
            f"its way missing, theirs, their link, one others may write, or too many "
            f"links): choose a directory only this user may write")


class Owners(NamedTuple):
    """Who is on a target, from one reading: the listeners a connection may reach, those
    it surely reaches (see `_reached`), and every socket there, the connections the
    listeners accepted included (a channel may hold one a listener since gone accepted);
    `followed` False for a target the check cannot follow as gRPC would."""

    listening: set[int]
    surely: set[int]
    every: set[int]
    followed: bool = True


NOWHERE = Owners(set(), set(), set())
UNFOLLOWED = Owners(set(), set(), set(), followed=False)

# gRPC's names for addresses, schemes in any case: `dns:HOST:PORT` or `dns:///HOST:PORT`,
# `ipv4:A:P,B:P` and `ipv6:[A]:P,...` (also after `///`). Each address is followed as if
# written alone; a DNS authority (`dns://server/...`) asks a resolver the check cannot.
_NAMED = re.compile(r"(?i:(dns|ipv4|ipv6):)(?:///)?(.+)")


def _unix_path(target: str) -> str | None:
    """The path of a `unix:` target (`unix:PATH` or `unix://PATH`), None for another."""
    scheme, _, rest = target.partition(":")
    return rest.removeprefix("//") if scheme.lower() == "unix" else None


def owners(target: str, proc_net: Path = Path("/proc/net")) -> Owners | None:
    """The uids owning what a connection to `target` may reach on this machine; empty
    when nothing listens there now; UNFOLLOWED for an abstract unix socket (whose owner
    nothing tells) or a form or a name the check cannot follow as gRPC would; None when
    the target leads elsewhere, or this system does not tell."""
    path = _unix_path(target)
    if path is not None:
        if any(mark in path for mark in "%?#"):  # gRPC decodes escapes, drops the rest
            return UNFOLLOWED
        try:
            uid = {os.stat(path).st_uid}
        except OSError:
            return NOWHERE
        return Owners(uid, uid, uid)
    named = _NAMED.fullmatch(target)
    addresses = [target] if named is None else (
        [named.group(2)] if named.group(1).lower() == "dns" else named.group(2).split(","))
    found = [_plain_owners(address, proc_net) for address in addresses]
    if UNFOLLOWED in found:
        return UNFOLLOWED
    here = [owned for owned in found if owned is not None]
    if not here:
        return None
    return Owners(set().union(*(owned.listening for owned in here)),
                  set().union(*(owned.surely for owned in here)),
                  set().union(*(owned.every for owned in here)))


def _plain_owners(target: str, proc_net: Path) -> Owners | None:
    """`owners` of one plain HOST:PORT."""
    written = _PLAIN_TARGET.fullmatch(target)
    if written is None:
        return UNFOLLOWED
    host, port = written.group(1) or written.group(2), int(written.group(3))
    addresses = _addresses(host, port)
    if addresses is None:
        return UNFOLLOWED
    sockets = sockets_at(proc_net, port)
    here = [address for address in addresses if is_here(address)]
    if sockets is None or not here:
        return None

    ours = {os.geteuid(), 0}

    def v6_only(address: Address) -> bool:
        """Whether another user's socket on IPv6's wildcard takes no connection to IPv4's
        `address`: it has IPV6_V6ONLY (which /proc does not tell) when a listener of this
        user's or root's is surely reached there, since the kernel refuses the two binds
        otherwise; tcp6 was read first, so one seen beside it was there before it bound,
        or is gone. Counted, such a socket stopped every call while it was there."""
        return address.version == 4 and any(
            listening and uid in ours and bound in _reached(address, surely=True)
            for bound, uid, listening in sockets)

    shadowed = {address for address in here if v6_only(address)}

    def uids(accepted: bool, surely: bool) -> set[int]:
        return {uid for address in here for bound, uid, listening in sockets
                if (accepted or listening) and bound in _reached(address, surely)
                and not (bound == ANY_V6 and uid not in ours and address in shadowed)}

    return Owners(uids(False, False), uids(False, True), uids(True, False))


def listening_uids(target: str, proc_net: Path = Path("/proc/net"), *,
                   accepted: bool = False) -> set[int] | None:
    """`owners` of `target`: its listeners, or with `accepted` every socket there."""
    found = owners(target, proc_net)
    if found is None:
        return None
    return found.every if accepted else found.listening


def strangers(uids: set[int], engine_uid: int | None = None) -> set[int]:
    """Those of `uids` that are neither this user, nor root, nor `engine_uid` (the user
    whose engine issued the token, where it was known)."""
    return uids - {os.geteuid(), 0, engine_uid}


def may_take_token(target: str, engine_uid: int | None,
                   proc_net: Path = Path("/proc/net")) -> bool:
    """Whether a kept seat's token may be sent to `target` now: somewhere else (nothing
    to check), or here with something listening, all of it trusted. Nothing listening
    is a no: whoever binds the port before the call connects would get it."""
    owners = listening_uids(target, proc_net)
    return owners is None or (bool(owners) and not strangers(owners, engine_uid))


class OwnerRule:
    """A channel's calls (through `OwnerCheck` or `AsyncOwnerCheck`) go out only while no
    process of another user listens at `target`, or holds a connection accepted there,
    than this user, root, and the one other user whose server alone listened there when
    the check began.

    Why: a channel reconnects to whatever listens on the port after the engine restarts,
    and every call of a game carries its seat's token: a local user who took the port in
    that moment could read the player's hand and move for them. The accepted connections
    count too: gRPC reconnects in the background, and a squatter that accepted that
    connection and closed its listener was sent the next call (the audit's re-test).
    Another user is trusted only as the one listener there, one a connection surely
    reaches, and only while it stays alone: beside this user's or root's engine, or
    beside a second user, a stranger is a squatter waiting for the port (one on [::]:P
    with IPV6_V6ONLY, which no connection to 127.0.0.1:P reaches, was trusted so: the
    second to fifth re-tests; alone there, it stayed trusted when an engine came up
    beside it during a check). Nothing there, or (unless `strict`) a target the check
    cannot follow (see `owners`), is let go: such a call fails, or goes where the player
    pointed it, as it did before the check."""

    def __init__(self, target: str, proc_net: Path = Path("/proc/net"), *,
                 strict: bool = False) -> None:
        """`strict`, for a server's channel (whose key or secret acts for many seats, and
        which may start while its server is down): no lone other user is trusted, and
        no call goes to a target the check cannot follow (a re-test: `dns:///` and
        `ipv4:` forms went unchecked)."""
        self.target, self.proc_net, self.strict = target, proc_net, strict
        path = _unix_path(target)
        self.socket = Path(path) if path is not None else None
        at_start = owners(target, proc_net) or NOWHERE
        lone = at_start.listening
        alone = len(lone) == 1 and strangers(lone) == lone == at_start.surely
        self.trusted = lone if alone and not strict else set()

    def refusal(self) -> str | None:
        """Why a call may not go now (a stranger is on the target), or None."""
        there = owners(self.target, self.proc_net) or NOWHERE  # one reading per call
        if self.strict and not there.followed:
            return (f"not sent: {self.target} is in a form the check of who listens there "
                    f"cannot follow: write HOST:PORT (a name or an address) or unix:PATH")
        unsafe = unsafe_socket(self.socket) if self.strict and self.socket else None
        if unsafe is not None:
            return f"not sent: {unsafe}"
        if there.listening - self.trusted:  # no longer alone: trusted no more (4th re-test)
            self.trusted = set()
        others = strangers(there.every) - self.trusted
        if not others:
            return None
        users = ", ".join(str(uid) for uid in sorted(others))
        return (f"not sent: a process of another user (uid {users}) is on {self.target} "
                f"now, not the server this client began with")


class OwnerCheck(OwnerRule, grpc.UnaryUnaryClientInterceptor,
                 grpc.UnaryStreamClientInterceptor):
    """`OwnerRule` on a sync channel: `Client(target, interceptors=(OwnerCheck(target),))`;
    a refused call raises Unavailable (`untrusted-listener`)."""

    def check(self) -> None:
        refusal = self.refusal()
        if refusal is not None:
            raise Unavailable(refusal, reason=UNTRUSTED)

    def intercept_unary_unary(self, continuation: Callable[..., Any],
                              client_call_details: grpc.ClientCallDetails,
                              request: Any) -> Any:
        self.check()
        return continuation(client_call_details, request)

    def intercept_unary_stream(self, continuation: Callable[..., Any],
                               client_call_details: grpc.ClientCallDetails,
                               request: Any) -> Any:
        self.check()
        return continuation(client_call_details, request)


class AsyncOwnerCheck(OwnerRule, grpc.aio.UnaryUnaryClientInterceptor,
                      grpc.aio.UnaryStreamClientInterceptor):
    """`OwnerRule` on an asyncio channel (`AsyncClient(target, interceptors=...)`, or
    `grpc.aio.insecure_channel`'s): a refused call fails as gRPC's own do, UNAVAILABLE
    with the reason `untrusted-listener`, so every caller handles it as it handles them.
    The servers' inner channels carry what acts for many seats: the hosted AI's key to
    the engine and to the AI service, the web gateway's secret (twenty-ninth audit)."""

    def check(self) -> None:
        refusal = self.refusal()
        if refusal is None:
            return
        status = status_pb2.Status(code=grpc.StatusCode.UNAVAILABLE.value[0], message=refusal)
        status.details.add().Pack(error_details_pb2.ErrorInfo(reason=UNTRUSTED))
        raise grpc.aio.AioRpcError(
            grpc.StatusCode.UNAVAILABLE, grpc.aio.Metadata(),
            grpc.aio.Metadata((DETAILS_KEY, status.SerializeToString())), details=refusal)

    async def intercept_unary_unary(self, continuation: Callable[..., Any],
                                    client_call_details: grpc.aio.ClientCallDetails,
                                    request: Any) -> Any:
        self.check()
        return await continuation(client_call_details, request)

    async def intercept_unary_stream(self, continuation: Callable[..., Any],
                                     client_call_details: grpc.aio.ClientCallDetails,
                                     request: Any) -> Any:
        self.check()
        return await continuation(client_call_details, request)
