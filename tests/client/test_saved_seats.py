"""The seats `battleline play` keeps on disk: the user's alone, per engine, never half
written, and a damaged file is no error (it only ever holds a way back)."""

from __future__ import annotations

import stat
from pathlib import Path

from battleline_client.common import SeatHandle
from battleline_client.saved_seats import SavedSeats, default_directory


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
    assert [p.name for p in kept.path.parent.iterdir()] == ["seats.json"]  # no temporary left


def test_a_missing_or_damaged_file_holds_no_seat(tmp_path: Path) -> None:
    kept = SavedSeats(tmp_path, "t")
    assert kept.left() == []
    kept.path.write_text("{not json")
    assert kept.left() == []
    kept.path.write_text('[{"unexpected": 1}]')
    assert kept.left() == []
    kept.keep(SeatHandle("m", "token", 0), "a friend")  # and it is written anew
    assert [s.match_id for s in kept.left()] == ["m"]


def test_the_default_place_follows_xdg() -> None:
    assert default_directory({"XDG_STATE_HOME": "/x/state"}) == Path("/x/state/battleline")
    assert default_directory({}) == Path.home() / ".local" / "state" / "battleline"
