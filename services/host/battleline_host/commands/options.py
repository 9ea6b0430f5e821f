"""Options that several server commands share, declared once so they read the same
environment variables and mean the same thing everywhere."""

from __future__ import annotations

import pwd
import string
from typing import Annotated

import typer

from battleline_engine.logs import LogFormat, LogLevel
from battleline_engine.ratelimit import Rate
from battleline_gateway.limits import WebLimits

WEB_LIMITS = WebLimits()  # the defaults of the web port's options
MAX_UID = 2**32 - 2  # (uid_t)-1 means "no change" to the kernel
# What a --host may hold: a name's characters, and an IPv6 address's (glibc took `*` for
# loopback, gRPC's resolver did not: a re-test).
HOST_CHARACTERS = frozenset(string.ascii_letters + string.digits + "-_.:")

LogLevelOption = Annotated[LogLevel, typer.Option(
    envvar="BATTLELINE_LOG_LEVEL", case_sensitive=False, help="The least severe level logged.",
)]
LogFormatOption = Annotated[LogFormat, typer.Option(
    envvar="BATTLELINE_LOG_FORMAT", case_sensitive=False,
    help="json (one object per line, for a log collector) or text.",
)]
RedisClusterOption = Annotated[bool, typer.Option(
    envvar="REDIS_CLUSTER", help="The Redis URL names a node of a Redis Cluster."
)]
def bindable_host(host: str | None) -> str | None:
    """A --host every server here can bind, checked before anything starts: gRPC's
    resolver reads no shorthand address (`127.1`, `0x7f.1`), no scope (`::1%lo`) and no
    name out of ASCII, nothing binds an address of another machine, and no connection
    reaches a multicast or broadcast one (probed). Each failed late, after a line of
    gRPC's log, with a line that blamed another program for the port, or started a server
    no one could reach (the twenty-ninth audit's re-tests)."""
    import ipaddress
    import socket

    from battleline_engine.listening import unbracketed

    if host is None:
        return None
    name = unbracketed(host)
    if (not name or not set(name) <= HOST_CHARACTERS or (name != host and ":" not in name)):
        raise typer.BadParameter(
            f"{host!r}: give an address (127.0.0.1, ::1 or [::1], 0.0.0.0) or a name the "
            "system knows, in ASCII letters, digits, '-', '_' and '.', with no scope (%)")
    try:
        ipaddress.ip_address(name)
    except ValueError:
        try:
            full = socket.inet_ntoa(socket.inet_aton(name))
        except OSError:
            pass
        else:
            raise typer.BadParameter(f"write the address in full ({full}), not {host}")
    try:
        found = socket.getaddrinfo(name, 0, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (OSError, UnicodeError):
        raise typer.BadParameter(f"no address found for {host!r} (give an address, or a "
                                 "name the system knows)") from None
    for family, kind, proto, _, address in found:
        with socket.socket(family, kind, proto) as probe:
            try:
                probe.bind(address)
            except OSError as err:
                raise typer.BadParameter(f"{host} is not an address of this machine "
                                         f"({err.strerror})") from None
            try:  # a multicast or broadcast address binds, however written (a re-test)
                probe.listen()
                with socket.create_connection(probe.getsockname()[:2], timeout=2):
                    pass
            except OSError as err:
                raise typer.BadParameter(f"no connection reaches a server on {host} "
                                         f"({err.strerror or err}): a multicast or "
                                         "broadcast address?") from None
    return host


HostOption = Annotated[str, typer.Option(
    envvar="BATTLELINE_HOST", callback=bindable_host, help="Address to bind.")]
RedisOwnerOption = Annotated[str | None, typer.Option(
    envvar="BATTLELINE_REDIS_OWNER",
    help="The user (name or uid) Redis runs as, when it listens on a TCP port of this "
         "machine: its password goes to no process of another user (this one and root "
         "aside). Default: whoever holds its port when this command starts (waited "
         "for while no one does, where it starts other processes).",
)]
WebMaxConnectionsOption = Annotated[int, typer.Option(
    envvar="BATTLELINE_WEB_MAX_CONNECTIONS", min=1,
    help="Open connections the web port accepts; more are closed at once.",
)]
WebMaxConnectionsPerAddressOption = Annotated[int, typer.Option(
    envvar="BATTLELINE_WEB_MAX_CONNECTIONS_PER_ADDRESS", min=1,
    help="Open web connections one address may hold (a --trusted-proxy: any); more are "
         "closed at once.",
)]
WebRequestTimeoutOption = Annotated[float, typer.Option(
    envvar="BATTLELINE_WEB_REQUEST_TIMEOUT_S", min=0.1,
    help="Seconds a web request (headers and body) may take to arrive.",
)]
WebRequestRateOption = Annotated[float, typer.Option(
    envvar="BATTLELINE_WEB_REQUEST_RATE", min=0.001,
    help="Web requests (page files and calls; a Watch once, when opened) per second per "
         "client address: a trusted proxy's own are not counted, each address it forwards "
         "is. Burst: 5 s of them, at least 10. More are refused with RESOURCE_EXHAUSTED "
         "(HTTP 429) before their body is read.",
)]


def web_limits(max_connections: int, per_address: int, request_timeout_s: float,
               request_rate: float) -> WebLimits:
    """The web port's limits from its options."""
    return WebLimits(max_connections=max_connections, max_connections_per_address=per_address,
                     request_timeout_s=request_timeout_s,
                     request_rate=Rate(request_rate, max(10.0, request_rate * 5)))


def log_args(level: LogLevel, fmt: LogFormat) -> list[str]:
    """The log options of a child process started by a command: it logs as its parent."""
    return ["--log-level", level.value, "--log-format", fmt.value]


# What deploy/'s manifests shipped as secrets until the twenty-fourth session (old copies
# of them may still hold it).
PLACEHOLDER = "change-me"


def checked_secret(name: str, value: str) -> str:
    """A secret from the environment variable `name` ("" when unset), refused when it is
    short or an old manifest's placeholder: a published key would let anyone act for
    the hosted AI or pick the address a gateway's caller is counted under."""
    if value and len(value) < 16:
        raise typer.BadParameter(f"{name}: at least 16 characters")
    if PLACEHOLDER in value.lower():
        raise typer.BadParameter(f"{name} is still the placeholder of deploy/: set a random "
                                 "one (e.g. `python -c 'import secrets; "
                                 "print(secrets.token_urlsafe(32))'`)")
    return value


REDIS_SCHEMES = ("redis", "rediss", "redis+cluster", "rediss+cluster", "unix")


def given_redis_owner(owner: str | None) -> int | None:
    """`--redis-owner` (a user's name or uid) as a uid; None if not given."""
    if owner is None:
        return None
    if owner.isascii() and owner.isdigit():
        if int(owner) > MAX_UID:
            raise typer.BadParameter(f"--redis-owner: {owner} is past the largest uid")
        return int(owner)
    try:
        return pwd.getpwnam(owner).pw_uid
    except KeyError:
        raise typer.BadParameter(f"--redis-owner: no user {owner!r} on this machine "
                                 "(a name or a uid)") from None


def cluster_url(url: str | None, cluster: bool) -> str | None:
    """The Redis URL as Storage reads it: with `--redis-cluster` (REDIS_CLUSTER), the
    `+cluster` scheme that picks the cluster client (a node's plain URL would have the
    plain client follow no MOVED redirection)."""
    from battleline_engine.storage.connection import is_cluster_url  # (redis: imported late)

    if not cluster:
        return url
    if not url:
        raise typer.BadParameter("--redis-cluster needs --redis-url (a node of the cluster)")
    if is_cluster_url(url.lower()):
        return url
    if not url.lower().startswith(("redis://", "rediss://")):
        raise typer.BadParameter("--redis-cluster needs a redis:// or rediss:// URL of a node")
    return url.replace("://", "+cluster://", 1)


def checked_redis_url(ctx: typer.Context, option: str, url: str | None) -> None:
    """Refuse a Redis URL that cannot be right, in one line that does not repeat it (it may
    hold a password): not one of `REDIS_SCHEMES`, or a port out of range; typed
    with a password on the command line (readable by every local user: a password goes by
    REDIS_URL, which the option also reads); or with deploy/'s placeholder password."""
    from urllib.parse import urlsplit

    if not url:
        return
    if url != url.strip() or any(ord(c) < 0x20 or ord(c) == 0x7F for c in url):
        # urlsplit drops them before the scheme; redis-py does not (a traceback)
        raise typer.BadParameter(f"{option}: a URL without spaces or control characters "
                                 "around or in it")
    parts = urlsplit(url)
    if parts.scheme not in REDIS_SCHEMES:
        raise typer.BadParameter(f"{option}: a redis://, rediss://, redis+cluster:// or "
                                 f"unix:// URL, not {parts.scheme or 'a bare address'}")
    try:
        parts.port  # noqa: B018 - parsing the port is the check
    except ValueError as err:
        raise typer.BadParameter(f"{option}: {err}") from None
    if not parts.password:
        return
    source = ctx.get_parameter_source(option.lstrip("-").replace("-", "_"))
    if source is not None and source.name == "COMMANDLINE":
        raise typer.BadParameter(f"{option}: give a URL with a password by REDIS_URL, not on "
                                 "the command line (every local user can read it)")
    if PLACEHOLDER in parts.password.lower():
        raise typer.BadParameter(f"{option}: Redis's password is still the placeholder of "
                                 "deploy/: set Redis's password and REDIS_URL to a random one")
