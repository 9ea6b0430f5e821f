"""The seats `battleline play` is playing, kept on disk until their match ends.

Why: a game left without resigning (the terminal closed, the connection or the machine
went down) ran on with no way back to it, the seat's token lost with the process, until
its clock ran out. Kept here, `battleline play --resume` takes it up again. A token is
its seat's one credential, so the file is its user's alone (0600, in a directory made
0700, and one the user owns that no one else may write to: refused otherwise), replaced
whole under a lock, never half written. Seats older than KEEP_DAYS are let go (their
matches are long over), so the file stays small.
What is read back is only ever a way back: a file that is missing, damaged, not a
regular file of the user's, or in a directory others may write reads as no seat.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import stat
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .common import SeatHandle
from .printable import plain

FILE_NAME = "seats.json"
LOCK_NAME = "seats.lock"
MAX_BYTES = 64 * 1024  # far more than any user's seats: a bigger file is not ours
KEEP_DAYS = 30  # a match's record outlives its end by 7-30 days; its seat, no longer
MAX_SEATS = 100  # the newest kept, at most (about 25 KB)


class UnsafeStateDirectory(PermissionError):
    """A state directory another user owns or may write to: it could swap the seats
    (plant one, or take the player's away), so nothing is read or kept there."""


def default_directory(environ: Mapping[str, str]) -> Path:
    """Where the seats are kept: $XDG_STATE_HOME/battleline, else ~/.local/state/battleline."""
    base = environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "battleline"


@dataclass(frozen=True)
class SavedSeat:
    """A seat in a match not known to be over, and where it is played."""

    target: str  # the engine, as given to `battleline play`
    match_id: str
    token: str = field(repr=False)
    seat: int  # types_pb2.Seat
    against: str  # who the player was playing, as the command told it: "AI level 4"
    saved_at: float  # epoch seconds
    # The user whose process listened at `target` (on this machine) when the seat was
    # kept, if known: the token goes back to that user's engine, this user's or root's.
    engine_uid: int | None = None

    @property
    def handle(self) -> SeatHandle:
        return SeatHandle(self.match_id, self.token, self.seat)

    @classmethod
    def parse(cls, entry: Any) -> SavedSeat | None:
        """The seat an entry of the file holds, None if it is not one (its text made
        printable: it is shown in the terminal)."""
        if not isinstance(entry, dict):
            return None
        texts = [entry.get(name) for name in ("target", "match_id", "token", "against")]
        seat, saved_at = entry.get("seat"), entry.get("saved_at")
        engine_uid = entry.get("engine_uid")
        if not all(isinstance(t, str) and t for t in texts) or type(seat) is not int \
                or not isinstance(saved_at, int | float) or not math.isfinite(saved_at) \
                or not (engine_uid is None or type(engine_uid) is int):
            return None
        target, match_id, token, against = (plain(str(t))[:200] for t in texts)
        return cls(target, match_id, token, seat, against, float(saved_at), engine_uid)


class SavedSeats:
    """The seats kept for one engine, in the file of one user's seats."""

    def __init__(self, directory: Path, target: str) -> None:
        self.directory = directory
        self.path = directory / FILE_NAME
        self.target = target

    def left(self) -> list[SavedSeat]:
        """The seats kept for this engine, the latest first."""
        return sorted((s for s in self._read() if s.target == self.target),
                      key=lambda s: -s.saved_at)

    def keep(self, handle: SeatHandle, against: str, engine_uid: int | None = None) -> None:
        """Keep a seat (OSError, UnsafeStateDirectory among them, if it cannot be)."""
        seat = SavedSeat(self.target, handle.match_id, handle.token, handle.seat, against,
                         time.time(), engine_uid)
        oldest = seat.saved_at - KEEP_DAYS * 86_400
        with self._locked():
            others = [s for s in self._read() if not self._same(s, handle.match_id)
                      and s.saved_at > oldest]
            newest = sorted(others, key=lambda s: -s.saved_at)[:MAX_SEATS - 1]
            self._write([*newest, seat])

    def forget(self, match_id: str) -> None:
        with self._locked():
            seats = self._read()
            left = [s for s in seats if not self._same(s, match_id)]
            if len(left) != len(seats):
                self._write(left)

    def _same(self, seat: SavedSeat, match_id: str) -> bool:
        return seat.target == self.target and seat.match_id == match_id

    def _safe(self) -> bool:
        """Whether the directory (a link's target) is the user's own and no one else may
        write to it."""
        try:
            info = self.directory.stat()
        except OSError:
            return False
        return (stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid()
                and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH))

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """This user's seat file, read and replaced by one process at a time (two
        `battleline play` keeping a seat at once lost one of them)."""
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not self._safe():
            raise UnsafeStateDirectory(f"{self.directory} is another user's, or others may "
                                       "write to it")
        descriptor = os.open(self.directory / LOCK_NAME,
                             os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
            yield
        finally:
            os.close(descriptor)

    def _read(self) -> list[SavedSeat]:
        if not self._safe():
            return []
        try:  # not through a link, nor waiting on a pipe; a regular file of ours, small
            descriptor = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            return []
        with os.fdopen(descriptor, "rb") as file:
            info = os.fstat(descriptor)
            if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid() \
                    or info.st_size > MAX_BYTES:
                return []
            try:
                entries = json.loads(file.read(MAX_BYTES + 1))
            except (ValueError, RecursionError):
                return []
        if not isinstance(entries, list):
            return []
        return [seat for seat in map(SavedSeat.parse, entries) if seat is not None]

    def _write(self, seats: list[SavedSeat]) -> None:
        descriptor, temporary = tempfile.mkstemp(dir=self.directory, prefix=".seats-")
        try:  # mkstemp's file is the user's alone (0600) from the start
            with os.fdopen(descriptor, "w") as out:
                json.dump([asdict(s) for s in seats], out)
            os.replace(temporary, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
