"""The seats `battleline play` is playing, kept on disk until their match ends.

Why: a game left without resigning (the terminal closed, the connection or the machine
went down) ran on with no way back to it, the seat's token lost with the process, until
its clock ran out. Kept here, `battleline play --resume` takes it up again. A token is
its seat's one credential, so the file is its user's alone (0600, in a 0700 directory)
and is replaced whole, never half written.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .common import SeatHandle

FILE_NAME = "seats.json"


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

    @property
    def handle(self) -> SeatHandle:
        return SeatHandle(self.match_id, self.token, self.seat)


class SavedSeats:
    """The seats kept for one engine, in the file of one user's seats (a missing or
    damaged file reads as none: it only ever holds a way back, nothing a game needs)."""

    def __init__(self, directory: Path, target: str) -> None:
        self.path = directory / FILE_NAME
        self.target = target

    def left(self) -> list[SavedSeat]:
        """The seats kept for this engine, the latest first."""
        return sorted((s for s in self._read() if s.target == self.target),
                      key=lambda s: -s.saved_at)

    def keep(self, handle: SeatHandle, against: str) -> None:
        seat = SavedSeat(self.target, handle.match_id, handle.token, handle.seat, against,
                         time.time())
        self._write([s for s in self._read() if not self._same(s, handle.match_id)] + [seat])

    def forget(self, match_id: str) -> None:
        seats = self._read()
        left = [s for s in seats if not self._same(s, match_id)]
        if len(left) != len(seats):
            self._write(left)

    def _same(self, seat: SavedSeat, match_id: str) -> bool:
        return seat.target == self.target and seat.match_id == match_id

    def _read(self) -> list[SavedSeat]:
        try:
            return [SavedSeat(**entry) for entry in json.loads(self.path.read_text())]
        except (OSError, ValueError, TypeError):
            return []

    def _write(self, seats: list[SavedSeat]) -> None:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".seats-")
        try:  # mkstemp's file is the user's alone (0600) from the start
            with os.fdopen(descriptor, "w") as out:
                json.dump([asdict(s) for s in seats], out)
            os.replace(temporary, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
