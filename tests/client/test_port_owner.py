"""Twenty-seventh audit: `battleline play` sent the tokens of the games it kept for
--resume to whatever answered on the engine's loopback port, so any local user who bound
it while the player's serve was down could read the player's hand and move for them.
Kept tokens now go only to a process of the player's, root's, or the user whose engine
issued them (`battleline_client.port_owner`)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import Result
from typer.testing import CliRunner

from battleline_client import port_owner
from battleline_client.cli import app
from battleline_client.client import Client, Seat
from battleline_client.commands import options
from battleline_client.commands import play as play_command
from battleline_client.common import SeatHandle
from battleline_client.errors import BattleLineError, Unavailable
from battleline_client.port_owner import listening_uids, may_take_token, strangers
from battleline_client.saved_seats import SavedSeats
from battleline_host.local import LocalService
from tests.processes import free_port
from tests.squatters import SQUATTER, squat

HEADER = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid\n"


def _row(local: str, state: str, uid: int) -> str:
    return (f"   0: {local} 00000000:0000 {state} 00000000:00000000 00:00000000 00000000 "
            f"{uid:5d}        0 1 1 0000000000000000 100 0 0 10 0\n")


def _proc_net(tmp_path: Path) -> Path:
    """A /proc/net of a few sockets, in the kernel's byte order (32-bit words, little
    endian on this machine's kind)."""
    (tmp_path / "tcp").write_text(HEADER + "".join([
        _row("0100007F:C383", "0A", 1001),  # 127.0.0.1:50051, listening
        _row("0200007F:C384", "0A", 1002),  # 127.0.0.2:50052
        _row("00000000:1770", "0A", 1003),  # 0.0.0.0:6000
        _row("0100007F:1B58", "01", 1004),  # 127.0.0.1:7000, a connection, not a listener
    ]))
    (tmp_path / "tcp6").write_text(HEADER + "".join([
        _row("00000000000000000000000001000000:1F40", "0A", 1005),  # [::1]:8000
        _row("00000000000000000000000000000000:1F40", "0A", 1006),  # [::]:8000
        _row("0000000000000000FFFF00000100007F:2328", "0A", 1007),  # [::ffff:127.0.0.1]:9000
        _row("0000000000000000FFFF000000000000:2710", "0A", 1008),  # [::ffff:0.0.0.0]:10000
    ]))
    return tmp_path


def test_the_owners_of_what_a_loopback_target_reaches(tmp_path: Path) -> None:
    proc_net = _proc_net(tmp_path)
    assert listening_uids("127.0.0.1:50051", proc_net) == {1001}
    assert listening_uids("127.0.0.1:50052", proc_net) == set()  # 127.0.0.2 is not reached
    assert listening_uids("127.0.0.2:50052", proc_net) == {1002}
    # Written IPv4-mapped, as loopback to gRPC and not to Python 3.11 (a re-test of the
    # twenty-ninth audit: it was elsewhere to the check, and went unchecked).
    assert listening_uids("[::ffff:7f00:2]:50052", proc_net) == {1002}
    assert listening_uids("127.0.0.1:6000", proc_net) == {1003}  # the wildcard
    assert listening_uids("127.0.0.1:7000", proc_net) == set()  # nothing listens
    # ... but a listener since gone accepted a connection there (a channel may hold it)
    assert listening_uids("127.0.0.1:7000", proc_net, accepted=True) == {1004}
    assert listening_uids("127.0.0.1:50051", proc_net, accepted=True) == {1001}
    assert listening_uids("[::1]:8000", proc_net) == {1005, 1006}
    assert listening_uids("127.0.0.1:8000", proc_net) == {1006}  # dual-stack wildcard
    assert listening_uids("127.0.0.1:9000", proc_net) == {1007}  # IPv4 on an IPv6 socket
    assert listening_uids("127.0.0.1:10000", proc_net) == {1008}  # its wildcard so written
    # Audits of the fix: other spellings that reach loopback went unchecked. Plain ones
    # are checked (`localhost` and names under it as both loopbacks, as gRPC resolves
    # them); any other form gRPC reads is one more way past the check: nothing trusted.
    for spelling in ("LOCALHOST:50051", "0.0.0.0:50051", "[::ffff:127.0.0.1]:50051",
                     "foo.localhost:50051", "localhost.:50051"):
        assert 1001 in listening_uids(spelling, proc_net), spelling  # type: ignore[operator]
    assert listening_uids("localhost:8000", proc_net) == {1005, 1006}  # ::1 too, always
    # gRPC's names for addresses: each address followed as if written alone (a re-test
    # of the twenty-ninth audit: the servers' check let them all go).
    for form in ("ipv4:127.0.0.1:50051", "ipv4:///127.0.0.1:50051", "IPV4:127.0.0.1:50051",
                 "dns:///localhost:50051", "DNS:///localhost:50051", "dns:127.0.0.1:50051",
                 "ipv4:198.51.100.7:1,127.0.0.1:50051", "ipv6:[::ffff:127.0.0.1]:50051"):
        assert listening_uids(form, proc_net) == {1001}, form
    assert listening_uids("ipv6:[::1]:8000,[::1]:9000", proc_net) == {1005, 1006}
    assert listening_uids("ipv4:198.51.100.7:50051", proc_net) is None  # elsewhere
    for form in ("127.0.0.%31:50051", "dns:///127.0.0.%31:50051", "dns://8.8.8.8/localhost:1",
                 "ipv4:127.0.0.1:50051,127.0.0.%31:1",
                 "[fe80::1%eth0]:50051", "Unix-Abstract:engine", "no-such-name.invalid:1",
                 # numbers the system's resolver reads otherwise than gRPC's (a fifth
                 # round: `0127.0.0.1` was octal 87.0.0.1 to the check, 127.0.0.1 to gRPC)
                 "0127.0.0.1:50051", "127.1:50051", "0x7f000001:50051", "2130706433:50051",
                 "127.0.0.010:50051"):
        assert listening_uids(form, proc_net) == set(), form
        assert not may_take_token(form, None, proc_net), form
        # A server's channel sends nothing there; the player's goes where they chose.
        refusal = port_owner.OwnerRule(form, proc_net, strict=True).refusal() or ""
        assert "cannot follow" in refusal, form
        assert port_owner.OwnerRule(form, proc_net).refusal() is None, form
    # Elsewhere, or not told: None (nothing to check).
    assert listening_uids("198.51.100.7:50051", proc_net) is None
    assert listening_uids("127.0.0.1:50051", tmp_path / "missing") is None
    # One of this machine's own addresses is here (the one it would send from).
    with (socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe,
          contextlib.suppress(OSError)):  # no route at all: no such address to try
        probe.connect(("198.51.100.7", 9))
        own = probe.getsockname()[0]
        assert listening_uids(f"{own}:6000", proc_net) == {1003}  # the wildcard's
    # An abstract unix socket is here, its owner untold: nothing to trust.
    assert listening_uids("unix-abstract:engine", proc_net) == set()
    assert not may_take_token("unix-abstract:engine", None, proc_net)
    # A unix socket's owner is its file's; none there: nothing listens.
    (tmp_path / "engine.sock").touch()
    assert listening_uids(f"unix:{tmp_path / 'engine.sock'}", proc_net) == {os.geteuid()}
    assert listening_uids(f"Unix:{tmp_path / 'engine.sock'}", proc_net) == {os.geteuid()}
    assert listening_uids(f"unix:{tmp_path / 'gone.sock'}", proc_net) == set()


def test_a_token_goes_only_where_something_trusted_listens(tmp_path: Path) -> None:
    """Nothing listening is a no too: whoever binds the port before the call connects
    would get the token (audit of the fix: a squatter binding during the resends)."""
    proc_net = _proc_net(tmp_path)
    assert not may_take_token("127.0.0.1:7000", None, proc_net)  # nobody listens
    assert not may_take_token("127.0.0.1:50051", None, proc_net)  # uid 1001
    assert may_take_token("127.0.0.1:50051", 1001, proc_net)  # the issuing engine's user
    assert may_take_token("198.51.100.7:50051", None, proc_net)  # elsewhere: not ours


def test_who_is_a_stranger() -> None:
    me = os.geteuid()
    assert strangers({me, 0}) == set()
    assert strangers({me, 4242}) == {4242}
    assert strangers({4242}, engine_uid=4242) == set()  # the user whose engine issued it
    assert strangers({4243}, engine_uid=4242) == {4243}


def _sent_through(check: port_owner.OwnerCheck) -> bool:
    """Whether `check` lets a call go (to a continuation that only says it was sent)."""
    try:
        return bool(check.intercept_unary_unary(lambda details, request: True, None, None))
    except Unavailable as refused:
        assert refused.reason == "untrusted-listener"
        return False


def test_only_one_other_users_engine_alone_on_the_port_is_trusted(tmp_path: Path) -> None:
    """Second re-test of the twenty-eighth audit: the check trusted every user with a
    socket on the port when it began, so a squatter that listened beforehand on [::]:P
    with IPV6_V6ONLY (beside the player's engine on 127.0.0.1:P, and reached by no
    connection to it) or held a connection bound at [::1]:P was trusted, and took the
    port's calls after the engine stopped. Only another user's engine alone there is
    trusted now; beside this user's own, or a second stranger, none is."""
    me = os.geteuid()

    def checked(*rows: tuple[str, str, int],
                target: str = "127.0.0.1:50051") -> port_owner.OwnerCheck:
        folder = tmp_path / str(len(list(tmp_path.iterdir())))
        folder.mkdir()
        (folder / "tcp").write_text(HEADER + "".join(
            _row(local, state, uid) for local, state, uid in rows if "[" not in local))
        (folder / "tcp6").write_text(HEADER + "".join(
            _row(local[1:-1], state, uid) for local, state, uid in rows if "[" in local))
        return port_owner.OwnerCheck(target, folder)

    engine = ("0100007F:C383", "0A", 4242)  # another user's engine on 127.0.0.1:50051
    v6_only = ("[00000000000000000000000000000000:C383]", "0A", 65534)  # [::]:50051
    held = ("[00000000000000000000000001000000:C383]", "01", 65534)  # [::1]:50051, connected
    assert checked(engine).trusted == {4242} and _sent_through(checked(engine))
    for rows, target in (([engine, v6_only], "127.0.0.1:50051"),  # which one is the engine?
                         ([("0100007F:C383", "0A", me), held], "localhost:50051")):
        check = checked(*rows, target=target)
        assert check.trusted == set(), rows
        assert not _sent_through(check), rows  # the stranger is there now
    # Beside this user's engine on 127.0.0.1:P a stranger on [::]:P has IPV6_V6ONLY (the
    # kernel refuses the two binds otherwise) and takes no connection to 127.0.0.1:P: it
    # no longer stops every call (the twenty-ninth audit's re-test), until the engine
    # stops, when it could be anything.
    ours = checked(("0100007F:C383", "0A", me), v6_only)
    assert ours.trusted == set() and _sent_through(ours)
    (ours.proc_net / "tcp").write_text(HEADER)
    assert not _sent_through(ours)
    # With the player's own engine alone at the start, only it (and root) is let through.
    alone = checked(("0100007F:C383", "0A", me))
    assert alone.trusted == set() and _sent_through(alone)
    # A fourth re-test: a stranger alone at the start, the engine coming up beside it
    # after, stayed trusted, and took the port's calls once the engine stopped again.
    lone = checked(engine)
    assert lone.trusted == {4242}
    (lone.proc_net / "tcp").write_text(HEADER + _row("0100007F:C383", "0A", 4242)
                                       + _row("00000000:C383", "0A", me))
    assert not _sent_through(lone) and lone.trusted == set()  # beside it: trusted no more
    (lone.proc_net / "tcp").write_text(HEADER + _row("0100007F:C383", "0A", 4242))
    assert not _sent_through(lone)  # the stranger alone again: still refused
    # A fifth: alone on [::]:P (perhaps IPV6_V6ONLY, which /proc does not tell), a stranger
    # is no listener a connection to 127.0.0.1:P surely reaches: never trusted (an engine
    # coming up beside it during a check went unseen, and it kept its trust).
    assert checked(v6_only).trusted == set()
    assert checked(v6_only, target="[::1]:50051").trusted == {65534}  # IPv6 reaches it
    # A third re-test: beside root's engine, for a player who is not root, the stranger
    # was the one "other" user, and trusted.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(port_owner.os, "geteuid", lambda: 1000)
        check = checked(("0100007F:C383", "0A", 0), v6_only)
        assert check.trusted == set() and _sent_through(check)  # V6ONLY beside root's
        (check.proc_net / "tcp").write_text(HEADER)  # root's engine stops
        assert check.trusted == set() and not _sent_through(check)


def test_resuming_where_nothing_listens_keeps_the_games_and_says_so(tmp_path: Path) -> None:
    """The engine down: nothing is sent (see below), and `--resume` says the games are
    kept until it is back, rather than that none is left."""
    address = f"127.0.0.1:{free_port()}"
    kept = SavedSeats(tmp_path / "state", address)
    kept.keep(SeatHandle("m0000000003", "m0000000003.token", 1), "AI level 3")
    result = CliRunner().invoke(app, ["play", "--target", address, "--resume",
                                      "--state-dir", str(tmp_path / "state")],
                                terminal_width=200)
    assert result.exit_code == 1, result.output
    told = " ".join(result.output.split())  # as one line, however the terminal wrapped it
    assert f"no engine the check can trust listens on {address} now: your games there are kept" \
        in told
    assert [seat.match_id for seat in kept.left()] == ["m0000000003"]


def _kept_seat(tmp_path: Path) -> tuple[str, Path, str, Path]:
    """A seat kept for a free loopback port, by an engine of this user's: (the address,
    the state directory, the seat's token, the squatter's script)."""
    address = f"127.0.0.1:{free_port()}"
    state = tmp_path / "state"
    token = "m0000000001.s3cr3t-token-of-the-seat"
    SavedSeats(state, address).keep(SeatHandle("m0000000001", token, 1), "AI level 3",
                                    engine_uid=os.geteuid())
    script = tmp_path / "squatter.py"
    script.write_text(SQUATTER)
    return address, state, token, script


@pytest.mark.parametrize("owner", ["another user", "the player"])
def test_kept_tokens_go_to_no_other_users_process(tmp_path: Path, owner: str) -> None:
    """A seat kept for 127.0.0.1:P; then a process answers on P. Another user's process
    gets no token (`play` says why); the player's own does (the same path, the control)."""
    if os.geteuid() != 0:
        pytest.skip("needs root to run the squatter as another user")
    address, state, token, script = _kept_seat(tmp_path)
    uid = 65534 if owner == "another user" else os.geteuid()
    squatter = squat(address, uid, script)
    try:
        result = CliRunner().invoke(app, ["play", "--target", address, "--resume",
                                          "--state-dir", str(state)], terminal_width=200)
    finally:
        squatter.kill()
        calls, _ = squatter.communicate(timeout=10)
    assert result.exit_code == 1, result.output
    if owner == "another user":
        assert token not in calls, calls
        assert "served by a process of another user (uid 65534)" in result.output
    else:
        assert token in calls, calls


def test_a_squatter_binding_after_the_check_gets_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Audit of the fix: with the player's engine down nothing listened, the check found
    no stranger, and the GetView of each kept seat was resent for about 2 s after
    UNAVAILABLE: a squatter that bound the port meanwhile got every token (5 runs of 5).
    Now nothing listening means nothing is sent, and a kept seat's GetView goes once.
    Here the squatter binds right after the check, before anything could be sent."""
    if os.geteuid() != 0:
        pytest.skip("needs root to run the squatter as another user")
    address, state, token, script = _kept_seat(tmp_path)
    squatter = squat(address, 65534, script, later=True)
    checked, bound = threading.Event(), threading.Event()

    def check_then_let_it_bind(target: str, engine_uid: int | None) -> bool:
        verdict = port_owner.may_take_token(target, engine_uid)
        checked.set()
        assert bound.wait(30)
        return verdict

    monkeypatch.setattr(play_command, "may_take_token", check_then_let_it_bind)
    results: list[Result] = []
    try:
        playing = threading.Thread(target=lambda: results.append(CliRunner().invoke(
            app, ["play", "--target", address, "--ai", "1", "--state-dir", str(state)],
            terminal_width=200)))
        playing.start()
        assert checked.wait(30)
        assert squatter.stdin is not None and squatter.stdout is not None
        squatter.stdin.write("bind\n")
        squatter.stdin.flush()
        assert squatter.stdout.readline().strip() == "ready"
        bound.set()
        playing.join(30)
    finally:
        bound.set()
        squatter.kill()
        calls, _ = squatter.communicate(timeout=10)
    (result,) = results
    assert token not in calls, calls
    # Since the game's own calls are checked too (`options.client`), nothing at all: the
    # port was taken by another user's process after the command began.
    assert "/battleline.v1." not in calls, calls
    assert "another user (uid 65534)" in " ".join(result.output.split())
    assert result.exit_code == 1


@contextlib.contextmanager
def _a_game_on_an_engine_of_ours(redis_url: str, checked: bool) -> Iterator[
        tuple[int, LocalService, Seat]]:
    """A local match on a real engine of this user's at a free port, played through the
    commands' client (`checked`) or a plain one: (the port, the engine, the first seat).
    The squatters of these tests run as another user: root only."""
    if os.geteuid() != 0:
        pytest.skip("needs root to run the squatter as another user")
    port = free_port()
    engine = LocalService(redis_url, port=port)
    engine.start()
    address = f"127.0.0.1:{port}"
    client = options.client(address) if checked else Client(address)
    try:
        seat = client.seat(client.create(opponent="local", clock="none").seat)
        seat.view()
        yield port, engine, seat
    finally:
        client.close()
        engine.stop()


@pytest.mark.parametrize("checked", [True, False], ids=["the commands' client", "unchecked"])
def test_a_game_going_on_sends_nothing_to_whoever_takes_the_stopped_engines_port(
        redis_url: str, tmp_path: Path, checked: bool) -> None:
    """The twenty-seventh audit left it: a channel reconnects to whatever listens on the
    port after the engine stops, and every call of a game carries its seat's token. The
    commands' client (`options.client`) sends nothing once another user's process listens
    there; an unchecked client (the control) sends it the token, the stream's reconnect
    included."""
    script = tmp_path / "squatter.py"
    script.write_text(SQUATTER)
    squatter = None
    try:
        with _a_game_on_an_engine_of_ours(redis_url, checked) as (port, engine, seat):
            stream = seat.watch()
            assert next(stream).HasField("snapshot")
            engine.stop()
            squatter = squat(f"127.0.0.1:{port}", 65534, script)
            with pytest.raises(BattleLineError) as refused:
                seat.view()
            with pytest.raises(BattleLineError) as stream_refused:
                next(stream)
    finally:
        if squatter is not None:
            squatter.kill()
    assert squatter is not None
    calls, _ = squatter.communicate(timeout=10)
    if checked:
        for error in (refused.value, stream_refused.value):
            assert isinstance(error, Unavailable) and error.reason == "untrusted-listener"
            assert "another user (uid 65534)" in error.message
        assert seat.handle.token not in calls, calls
    else:
        # The view, and the view the stream's reconnect asks first (is the match over?)
        assert calls.count(seat.handle.token) >= 2, calls


# A squatter that takes the port as `uid` and accepts one connection (the channel's own
# reconnect in the background), then closes its listener, so nothing of its listens
# there, and relays the connection to a logging gRPC server of its own on `log_port`
# (the re-test of the twenty-eighth audit's fix).
RELAY = textwrap.dedent("""
    import os, socket, sys, threading, time
    from concurrent import futures
    import grpc

    class Log(grpc.GenericRpcHandler):
        def service(self, details):
            print(details.method, dict(details.invocation_metadata), flush=True)
            return None

    port, log_port, uid = (int(arg) for arg in sys.argv[1:4])
    server = grpc.server(futures.ThreadPoolExecutor(4))
    server.add_generic_rpc_handlers([Log()])
    "x".encode("idna")  # loaded before the user changes
    os.setgid(uid)
    os.setuid(uid)
    server.add_insecure_port(f"127.0.0.1:{log_port}")
    server.start()
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(8)
    print("ready", flush=True)
    accepted, _ = listener.accept()
    listener.close()
    upstream = socket.create_connection(("127.0.0.1", log_port))
    print("accepted", flush=True)

    def pump(source, sink):
        with_data = True
        while with_data:
            data = source.recv(65536)
            with_data = bool(data)
            sink.sendall(data)

    threading.Thread(target=pump, args=(accepted, upstream), daemon=True).start()
    threading.Thread(target=pump, args=(upstream, accepted), daemon=True).start()
    time.sleep(120)
""")


@pytest.mark.parametrize("checked", [True, False], ids=["the commands' client", "unchecked"])
def test_a_connection_a_squatter_accepted_and_kept_is_sent_nothing(
        redis_url: str, tmp_path: Path, checked: bool) -> None:
    """Re-test of the fix above: gRPC reconnects in the background, and a squatter that
    accepted that connection and closed its listener was sent the next call, the check
    having found nothing listening. The connections accepted on the port count too."""
    script = tmp_path / "relay.py"
    script.write_text(RELAY)
    squatter = None
    try:
        with _a_game_on_an_engine_of_ours(redis_url, checked) as (port, engine, seat):
            engine.stop()
            with pytest.raises(BattleLineError):  # nothing there: the channel tries again
                seat.client.view(seat.handle.match_id, seat.handle.token, resend=False)
            squatter = subprocess.Popen([sys.executable, str(script), str(port),
                                         str(free_port()), "65534"], stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True)
            assert squatter.stdout is not None
            for expected in ("ready", "accepted"):  # the channel's own reconnect, unasked
                assert squatter.stdout.readline().strip() == expected
            with contextlib.suppress(BattleLineError):
                seat.view()
    finally:
        if squatter is not None:
            squatter.kill()
    assert squatter is not None
    calls, _ = squatter.communicate(timeout=10)
    assert (seat.handle.token in calls) is not checked, calls
