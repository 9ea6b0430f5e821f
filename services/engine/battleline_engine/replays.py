"""Action ids: a request sent again under its id is answered from the store.

A client that lost an answer sends the same request with the same id and gets the
first answer back, nothing applied twice. The stored answer (a seat's latest only:
storage.matches keeps one per seat) carries a digest of what was asked, so that id
sent again with other actions is refused rather than answered with the first
request's answer, which would look like success while the game did nothing.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Final

from .errors import invalid

# Starts a stored answer that carries its request's digest. No protobuf message starts
# with a 0 byte (field number 0 is invalid), so an answer stored bare, by an engine of
# an earlier version, is told apart and replayed as it is. (The other way round, an
# earlier engine cannot read a sealed answer: during a rolling upgrade a retry that
# reaches one after a newer engine answered the request gets an error, not the answer.)
SEALED: Final = b"\x00r1"
DIGEST_BYTES: Final = 8


@dataclass(frozen=True, slots=True)
class Replay:
    """The idempotency record of one request: its key in the match's store and the
    digest of what it asked."""

    key: str
    digest: bytes

    @classmethod
    def of(cls, kind: str, seat: int, action_id: str, request: list[str]) -> Replay:
        """The record of a `kind` request ("a" actions, "r" resign) from `seat`, whose
        `request` is what it asks, as text (the same request gives the same text)."""
        digest = hashlib.blake2b("\n".join(request).encode(), digest_size=DIGEST_BYTES)
        return cls(f"{kind}:{seat}:{action_id}", digest.digest())

    def seal(self, answer: bytes) -> bytes:
        """The answer as stored, with the request's digest."""
        return SEALED + self.digest + answer

    def open(self, stored: bytes) -> bytes:
        """The stored answer, if it answered this very request (see the module)."""
        if not stored.startswith(SEALED):
            return stored
        start = len(SEALED)
        if stored[start:start + DIGEST_BYTES] != self.digest:
            raise invalid("action-id-reused", "this action id was sent before with other "
                          "actions: give each new request a new id")
        return stored[start + DIGEST_BYTES:]
