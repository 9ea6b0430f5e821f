"""The seats `battleline play` keeps on disk: the user's alone, per engine, never half
written, and a damaged file is no error (it only ever holds a way back)."""

from __future__ import annotations

import json
import multiprocessing
import os
import stat
from pathlib import Path

import pytest

from battleline_client.common import SeatHandle
from battleline_client.saved_seats import SavedSeats, UnsafeStateDirectory, default_directory


def test_seats_are_kept_per_engine_the_latest_first_and_forgotten(tmp_path: Path) -> None:
    here, there = SavedSeats(tmp_path / "s", "127.0.0.1:1"), SavedSeats(tmp_path / "s", "h:2")
    here.keep(SeatHandle("m1", "token-1", 0), "AI level 2")
    there.keep(SeatHandle("m2", "token-2", 1), "a friend")
    here.keep(SeatHandle("m3", "token-3", 1), "AI level 5")
    assert [s.match_id for s in here.left()] == ["m3", "m1"]
    assert [(s.match_id, s.token, s.seat, s.against) for s in there.left()] == [
        ("m2", "token-2", 1, "a friend")]
    here.forget("m3")
    there.forget("m1")  # another engine's match of that id: not this one
    assert [s.match_id for s in here.left()] == ["m1"]
    assert here.left()[0].handle == SeatHandle("m1", "token-1", 0)
    assert "token-1" not in repr(here.left()[0])  # a token never reaches a log line


def test_the_file_is_the_users_alone(tmp_path: Path) -> None:
    kept = SavedSeats(tmp_path / "state" / "battleline", "t")
    kept.keep(SeatHandle("m", "secret-token", 0), "AI level 1")
    assert stat.S_IMODE(kept.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(kept.path.parent.stat().st_mode) == 0o700
    names = sorted(p.name for p in kept.path.parent.iterdir())
    assert names == ["seats.json", "seats.lock"]  # no temporary left
    assert stat.S_IMODE((kept.path.parent / "seats.lock").stat().st_mode) == 0o600


def test_a_missing_or_damaged_file_holds_no_seat(tmp_path: Path) -> None:
    """Twentieth audit: a `saved_at` that was not a number, deep nesting, a pipe or a link
    to /dev/zero at the file's place crashed or hung `battleline play`."""
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    kept = SavedSeats(state, "t")
    good = {"target": "t", "match_id": "m0", "token": "x", "seat": 0, "against": "a",
            "saved_at": 1.0}
    assert kept.left() == []
    for text in ("{not json", '[{"unexpected": 1}]', "[" * 100_000 + "]" * 100_000,
                 json.dumps([{**good, "saved_at": "soon"}, {**good, "seat": "0"}]),
                 json.dumps([{**good, "saved_at": float("nan")}]), " " * (70 * 1024)):
        kept.path.write_text(text)
        assert kept.left() == [], text[:40]
    kept.path.write_text(json.dumps([good, {**good, "match_id": "m1", "against": "\x1b]0;x\x07"}]))
    assert [(s.match_id, s.against) for s in kept.left()] == [("m0", "a"), ("m1", "]0;x")]
    kept.path.unlink()
    os.mkfifo(kept.path)  # read, it would wait for a writer for ever
    assert kept.left() == []
    kept.path.unlink()
    kept.path.symlink_to("/dev/zero")
    assert kept.left() == []
    kept.path.unlink()
    kept.keep(SeatHandle("m", "token", 0), "a friend")  # and it is written anew
    assert [s.match_id for s in kept.left()] == ["m"]


def test_a_directory_others_may_write_to_is_not_used(tmp_path: Path) -> None:
    """Twentieth audit: a state directory another user could write to let it plant a seat
    (taken up by --resume) or take the player's away. Nothing is read or kept there."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    kept = SavedSeats(shared, "t")
    with pytest.raises(UnsafeStateDirectory):
        kept.keep(SeatHandle("m", "token", 0), "a friend")
    planted = {"target": "t", "match_id": "m", "token": "theirs", "seat": 0, "against": "a",
               "saved_at": 1.0}
    kept.path.write_text(json.dumps([planted]))
    assert kept.left() == []
    shared.chmod(0o700)  # the user's own again
    assert [s.token for s in kept.left()] == ["theirs"]


def _keep_many(directory: str, first: int) -> None:
    for n in range(first, first + 20):
        SavedSeats(Path(directory), "t").keep(SeatHandle(f"m{n}", "token", 0), "a friend")


def test_two_commands_keeping_seats_at_once_lose_none(tmp_path: Path) -> None:
    """Twentieth audit: two `battleline play` keeping a seat at the same moment each
    rewrote the file from what it had read, and one seat was lost (6 of 40)."""
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        pool.starmap(_keep_many, [(str(tmp_path / "s"), 0), (str(tmp_path / "s"), 100)])
    kept = SavedSeats(tmp_path / "s", "t").left()
    assert len({s.match_id for s in kept}) == 40


def test_the_default_place_follows_xdg() -> None:
    assert default_directory({"XDG_STATE_HOME": "/x/state"}) == Path("/x/state/battleline")
    assert default_directory({}) == Path.home() / ".local" / "state" / "battleline"
