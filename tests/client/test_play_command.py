"""`battleline play` and `battleline watch` driven in a real terminal (pexpect): a whole
hot-seat game on a local engine the command starts itself, and a whole game against a
hosted-AI seat taken by a real AI worker process with the AI's key."""

from __future__ import annotations

import json
import random
import re
import shutil
import stat
import sys
import time
from pathlib import Path

import pytest
import redis
from typer.testing import CliRunner

from battleline.v1 import types_pb2
from battleline_client.bots import choose
from battleline_client.cli import app
from battleline_client.client import Client
from battleline_client.commands.play import games_going_on, hint_line
from battleline_client.common import SeatHandle, is_finished, is_my_turn
from battleline_client.saved_seats import SavedSeats
from battleline_host.local import LocalService
from tests.ai.service_harness import WITH_AI, start_worker, stop
from tests.client import terminal

BATTLELINE = shutil.which("battleline") or str(Path(sys.executable).parent / "battleline")


def test_play_local_hot_seat_game_to_the_end() -> None:
    session = terminal.run([BATTLELINE, "play", "--local", "--seed", "3"])
    assert session.exitstatus == 0, session.output
    assert session.prompts > 20
    assert "wins by" in session.result or "no winner" in session.result


def test_play_against_a_hosted_ai_seat_to_the_end(redis_url: str, tmp_path: Path) -> None:
    with LocalService(redis_url, config=WITH_AI) as engine:
        worker = start_worker(engine.address, redis_url, tmp_path / "worker.log")
        try:
            session = terminal.run([BATTLELINE, "play", "--target", engine.address, "--ai", "4",
                                    "--auto-claim", "--wait", "30"])
        finally:
            stop(worker)
    assert session.exitstatus == 0, session.output
    assert session.prompts > 5
    assert "wins by" in session.result or "you win by" in session.result \
        or "no winner" in session.result


def test_hint_at_the_move_prompt_names_a_legal_move_or_why_not(ai_engine: LocalService) -> None:
    """A fresh user's walkthrough: the engine offers hints, `play` had no way to ask.
    `hint` at the move prompt prints the hosted AI's move for the seat (one of its legal
    actions), or the engine's reason in one line."""
    with Client(ai_engine.address) as client:
        created = client.create(opponent="local", clock="none", seed=4)
        assert created.other is not None
        seats = [client.seat(created.seat), client.seat(created.other)]
        mover = next(seat for seat in seats if seat.view().legal_actions)
        waiting = seats[1 - seats.index(mover)]
        line = hint_line(mover)
        suggested = re.fullmatch(r"the AI suggests \[bold\](.+?)\[/\].*", line)
        assert suggested is not None and suggested.group(1) in mover.view().legal_actions, line
        assert hint_line(waiting).startswith("[yellow]no hint (not-your-turn): ")


def test_play_gives_up_when_no_ai_worker_comes(redis_url: str) -> None:
    with LocalService(redis_url, config=WITH_AI) as engine:  # admits an AI that never comes
        session = terminal.run([BATTLELINE, "play", "--target", engine.address, "--ai", "2",
                                "--wait", "1"], answer=False)
    assert session.exitstatus == 2
    assert "nobody took the other seat within 1 s" in session.output
    store = redis.Redis.from_url(redis_url)  # the match it gave up on was cancelled
    assert {store.hget(key, "status") for key in store.scan_iter("bl:{*}:m")} == {b"finished"}
    store.close()


@pytest.mark.parametrize(("args", "after", "said"), [
    (["--friend"], r"waiting for the other seat", "cancelled the match"),
    (["--local", "--seed", "3"], terminal.PASS, "resigned the match"),
])
def test_leaving_the_table_resigns_the_match(redis_url: str, args: list[str], after: str,
                                             said: str) -> None:
    """Ctrl-C left the match running with no way back to it: four left against the AI
    held all of a player's places, and a friend waited out the clock. Leaving resigns
    (a match still waiting for its other seat is cancelled)."""
    with LocalService(redis_url) as engine:
        session = terminal.interrupt([BATTLELINE, "play", "--target", engine.address, *args],
                                     after=after)
    assert session.exitstatus == 130, session.output
    assert f"left the table: {said}" in session.output
    store = redis.Redis.from_url(redis_url)
    assert {store.hget(key, "status") for key in store.scan_iter("bl:{*}:m")} == {b"finished"}
    store.close()


def test_a_game_left_without_resigning_is_taken_up_again(redis_url: str,
                                                          tmp_path: Path) -> None:
    """A closed terminal (or a lost connection) left the match running and its seat's
    token gone with the process: the game could only be lost on time. The seat is kept,
    the player's alone, until the match ends, and `--resume` takes the game up again."""
    state = tmp_path / "state"
    with LocalService(redis_url, config=WITH_AI) as engine:
        worker = start_worker(engine.address, redis_url, tmp_path / "worker.log")
        try:
            left = terminal.interrupt(
                [BATTLELINE, "play", "--target", engine.address, "--ai", "2",
                 "--state-dir", str(state)], after=terminal.MOVE, hang_up=True)
            kept = json.loads((state / "seats.json").read_text())
            assert [seat["target"] for seat in kept] == [engine.address]
            assert stat.S_IMODE((state / "seats.json").stat().st_mode) == 0o600
            assert stat.S_IMODE(state.stat().st_mode) == 0o700
            with Client(engine.address) as client:
                assert client.view(kept[0]["match_id"]).phase == types_pb2.MATCH_PHASE_PLAYING
            shown = tmp_path / "resumed.log"
            pool, pending = terminal.start([BATTLELINE, "play", "--target", engine.address,
                                            "--resume", "--state-dir", str(state)],
                                           log_path=str(shown))
            with pool:
                resumed = pending.get(150)
            again = terminal.run([BATTLELINE, "play", "--target", engine.address, "--resume",
                                  "--state-dir", str(state)])
        finally:
            stop(worker)
    assert "left the table" not in left.output  # nothing resigned it
    assert resumed.exitstatus == 0, resumed.output
    assert "taking up your game against AI level 2" in shown.read_text()
    assert resumed.prompts > 5 and resumed.result
    assert json.loads((state / "seats.json").read_text()) == []  # over: forgotten
    assert again.exitstatus == 1
    assert "no game left unfinished" in again.output


def test_a_seat_that_cannot_be_kept_costs_the_way_back_not_the_game(redis_url: str,
                                                                    tmp_path: Path) -> None:
    """Twentieth audit: a state directory that could not be written (here: under a file)
    stopped `battleline play` with a traceback right after CreateMatch, its match neither
    played nor resigned. It is said in one line and the game goes on."""
    (tmp_path / "file").write_text("")
    with LocalService(redis_url, config=WITH_AI) as engine:
        worker = start_worker(engine.address, redis_url, tmp_path / "worker.log")
        try:
            session = terminal.interrupt(
                [BATTLELINE, "play", "--target", engine.address, "--ai", "2",
                 "--state-dir", str(tmp_path / "file" / "state")], after=terminal.MOVE)
        finally:
            stop(worker)
    assert "this seat is not kept for --resume" in session.output
    assert "Traceback" not in session.output
    assert "left the table: resigned the match" in session.output  # it was played


def test_a_kept_seat_the_engine_no_longer_knows_is_forgotten(service: LocalService,
                                                             tmp_path: Path) -> None:
    """Twentieth audit: a kept seat whose match the engine no longer had (its data lost,
    or the record expired) answered UNAUTHENTICATED, was never forgotten, and every later
    `battleline play` on that engine failed on it."""
    kept = SavedSeats(tmp_path / "state", service.address)
    with Client(service.address) as client:
        created = client.create(opponent="local", clock="none")
        kept.keep(created.seat, "a friend")
        kept.keep(SeatHandle("gone0match0id", "gone0match0id.not-a-token", 0), "a friend")
        going = games_going_on(client, kept)
    assert [saved.match_id for saved, _seat in going] == [created.match_id]
    assert [saved.match_id for saved in kept.left()] == [created.match_id]


def test_watch_follows_a_match_to_its_result(service: LocalService) -> None:
    with Client(service.address) as client:
        created = client.create(opponent="local", clock="none", auto_claim=True)
        assert created.other is not None
        pool, pending = terminal.start([BATTLELINE, "watch", created.match_id, "--target",
                                        service.address], answer=False)
        with pool:
            time.sleep(1.0)  # the stream starts before most moves: live events, not a replay
            seats = [client.seat(created.seat), client.seat(created.other)]
            rng = random.Random(2)
            while not is_finished(view := seats[0].view()):
                mover = 0 if is_my_turn(view) else 1
                seats[mover].act(*choose(seats[mover].view(), rng))
            session = pending.get(60)
    assert session.exitstatus == 0, session.output
    assert session.result.startswith("match over")
    assert f"match {created.match_id}" in session.output
    assert "last moves:" in session.output  # the final board tells the last moves in words


def test_a_name_is_shown_as_text_not_as_markup(service: LocalService) -> None:
    """A player's name is the other side's text: `[/x]` crashed the watcher's (and the
    opponent's) terminal with rich's MarkupError, `[link=...]` hid a link in it."""
    name = "[/x][link=https://evil.example]Bob"
    with Client(service.address) as client:
        created = client.create(opponent="local", clock="none", name=name)
        assert created.other is not None
        pool, pending = terminal.start([BATTLELINE, "watch", created.match_id, "--target",
                                        service.address], answer=False)
        with pool:
            time.sleep(1.0)
            client.seat(created.other).resign()  # the named seat wins: its name is told
            session = pending.get(60)
    assert session.exitstatus == 0, session.output
    assert session.result.startswith(f"match over: {name} wins by resignation")
    assert "\x1b]8;" not in session.output  # no hyperlink escape reached the terminal


def _stand_in_friend(address: str, invite_code: str) -> None:
    """A friend joining by invite code with the library and playing random moves."""
    rng = random.Random(3)
    with Client(address) as client:
        seat = client.seat(client.join(invite_code=invite_code, name="friend"))
        while not is_finished(view := seat.view()):
            if is_my_turn(view):
                seat.act(*choose(view, rng))
            else:
                time.sleep(0.02)


def test_play_with_a_friend_by_invite_code(service: LocalService, tmp_path: Path) -> None:
    log = tmp_path / "terminal.log"
    pool, pending = terminal.start([BATTLELINE, "play", "--target", service.address, "--friend",
                                    "--auto-claim", "--wait", "60"], log_path=str(log))
    with pool:
        deadline = time.monotonic() + 60
        code = None
        while code is None:
            assert time.monotonic() < deadline, "no invite code shown"
            time.sleep(0.1)
            text = log.read_text(encoding="utf-8") if log.exists() else ""
            found = re.search(r"BATTLELINE_INVITE=(\S+) battleline play --target",
                              text.replace("\r\n", " "))
            code = found.group(1) if found else None
        _stand_in_friend(service.address, code)
        session = pending.get(60)
    assert session.exitstatus == 0, session.output
    assert session.prompts > 5 and session.result.startswith("match over")
    assert "friend" in session.output  # the opponent's moves are shown by name


def test_play_takes_a_seed_for_a_local_game_only() -> None:
    """The server refuses a seed wherever the other seat is not the caller's (it would
    tell the AI's or the friend's hand), so `play` says so before starting anything."""
    for mode in (["--ai", "2"], ["--friend"], []):
        result = CliRunner().invoke(app, ["play", "--target", "127.0.0.1:1", "--seed", "3",
                                          *mode])
        assert result.exit_code == 2, result.output
        assert "--seed" in result.output and "--local" in result.output


def test_play_refuses_a_name_it_would_not_use() -> None:
    """`--name` with `--local` or `--resume` was silently ignored: neither makes a seat a
    name can go with, so `play` says so before starting anything."""
    for mode in (["--local"], ["--resume"]):
        result = CliRunner().invoke(app, ["play", "--target", "127.0.0.1:1", "--name", "Ann",
                                          *mode])
        assert result.exit_code == 2, result.output
        assert "--name" in result.output and "a name is for a new seat" in result.output


def test_a_hot_seats_screen_tells_the_moves_as_that_seat_was_told_them(
        service: LocalService) -> None:
    """Both seats of `play --local` shared one account of the last moves: the second seat's
    screen named the tactic the first seat drew (and the cards its Scout put back)."""
    from battleline_client.commands.play import _own_account

    with Client(service.address) as client:
        created = client.create(opponent="local", clock="none", seed=5)
        assert created.other is not None
        seats = [client.seat(created.seat), client.seat(created.other)]
        mover = next(seat for seat in seats if is_my_turn(seat.view()))
        other = seats[1 - seats.index(mover)]
        view = mover.view()
        play = next(a for a in view.legal_actions if a.startswith("play "))
        told = " ".join(e.text for e in mover.act(play, "draw tactic").events)
        (drawn,) = set(mover.view().hand) - set(view.hand)
        assert drawn in told  # the mover was told which tactic it drew
        for seat, sees in ((mover, True), (other, False)):
            account = " ".join(e.text for e in _own_account(seat, seat.view()))
            assert (drawn in account) is sees, (sees, account)


def test_the_invite_code_is_taken_from_the_environment(tmp_path: Path) -> None:
    """Twenty-seventh audit: `--join CODE` is in the process's command line, which every
    local user may read (and join with first); the friend is told the environment's
    form, which `play` reads as --join. A mode given on the command line wins over it
    (an exported one had made every other mode fail "choose one of")."""
    runner = CliRunner()
    env = {"BATTLELINE_INVITE": "X5CGF8PJTQ"}
    state = ["--state-dir", str(tmp_path / "state")]
    joined = runner.invoke(app, ["play", "--target", "127.0.0.1:1", *state], env=env)
    assert joined.exit_code == 1, joined.output  # nothing listens there
    assert "joining the match of the invite code in BATTLELINE_INVITE" in joined.output
    for mode in (["--ai", "2"], ["--local"]):
        other = runner.invoke(app, ["play", "--target", "127.0.0.1:1", *mode, *state],
                              env=env)
        assert other.exit_code == 1, (mode, other.output)  # went on, to find no engine
        assert "no engine answered on 127.0.0.1:1" in other.output, mode
        assert "joining" not in other.output, mode
    both = runner.invoke(app, ["play", "--target", "127.0.0.1:1", "--ai", "2", "--join", "X"])
    assert both.exit_code == 2 and "choose one of" in both.output


def test_an_invite_link_from_the_web_page_is_read_for_its_code() -> None:
    """The web page hands out `http://host/#join=CODE`; `play --join` took it whole and
    answered invite-not-found."""
    from battleline_client.commands.play import invite_code

    assert invite_code("http://127.0.0.1:8080/#join=X5CGF8PJTQ") == "X5CGF8PJTQ"
    assert invite_code("https://example.org/play?join=AB12CD34EF") == "AB12CD34EF"
    assert invite_code(" X5CGF8PJTQ ") == "X5CGF8PJTQ"


def test_watching_a_finished_match_shows_its_board_once_and_every_hand(
        service: LocalService) -> None:
    """`watch` of a finished match drew the board twice (its snapshot, then the end) and,
    unlike `play`, never showed the hands left at the end."""
    with Client(service.address) as client:
        created = client.create(opponent="local", clock="none", seed=2)
        client.seat(created.seat).resign()
        result = CliRunner().invoke(app, ["watch", created.match_id, "--target",
                                          service.address])
    assert result.exit_code == 0, result.output
    assert result.output.count("[1]") == 1, result.output  # one board
    assert len(re.findall(r"hand: ", result.output)) == 2, result.output
