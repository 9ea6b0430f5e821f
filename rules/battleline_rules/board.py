"""One flag of the battle line: both sides' cards, environment tactics, claim."""

from __future__ import annotations

from .cards import Tactic

UNCLAIMED = -1


class Flag:
    """Cards at one flag.

    ``cards[seat]`` lists that side's cards (troops and morale tactics) in the
    order they were placed and ``seqs[seat]`` their placement numbers: a side
    was completed when its latest card was placed, which decides ties.
    ``env`` holds (card, owner) for Fog and Mud.
    """

    __slots__ = ("cards", "claimed", "env", "seqs", "size", "text", "version")

    def __init__(self) -> None:
        self.cards: list[list[int]] = [[], []]
        self.seqs: list[list[int]] = [[], []]
        self.env: list[tuple[int, int]] = []
        self.claimed = UNCLAIMED
        # Cards a side needs: 3, or 4 with Mud (kept in step by add_env/remove_env).
        self.size = 3
        # Bumped by every change, so a cached verdict about this flag can tell it is current.
        self.version = 0
        # This flag in the position notation (`notation.flag_text`), written on first use
        # and dropped by every change. A copy shares it until either side changes: a turn
        # changes one flag of nine. It names the whole content, so others (the engine's
        # view bytes) key their own caches by it.
        self.text: str | None = None

    def copy(self) -> Flag:
        flag = Flag.__new__(Flag)
        flag.cards = [self.cards[0][:], self.cards[1][:]]
        flag.seqs = [self.seqs[0][:], self.seqs[1][:]]
        flag.env = self.env[:]
        flag.claimed = self.claimed
        flag.size = self.size
        flag.version = self.version
        flag.text = self.text
        return flag

    def _changed(self) -> None:
        self.version += 1
        self.text = None

    def add_env(self, card: int, owner: int) -> None:
        self._changed()
        self.env.append((card, owner))
        self.size = 4 if any(c == Tactic.MUD for c, _ in self.env) else 3

    def remove_env(self, card: int, owner: int) -> None:
        self._changed()
        self.env.remove((card, owner))
        self.size = 4 if any(c == Tactic.MUD for c, _ in self.env) else 3

    @property
    def fog(self) -> bool:
        return any(card == Tactic.FOG for card, _ in self.env)

    def is_open(self, seat: int) -> bool:
        """Whether ``seat`` may place a card here."""
        return self.claimed == UNCLAIMED and len(self.cards[seat]) < self.size

    def completed_at(self, seat: int) -> int:
        """Placement number of the side's latest card (smaller: completed first)."""
        return max(self.seqs[seat])

    def place(self, seat: int, card: int, seq: int) -> None:
        self._changed()
        self.cards[seat].append(card)
        self.seqs[seat].append(seq)

    def take(self, seat: int, card: int) -> None:
        self._changed()
        index = self.cards[seat].index(card)
        del self.cards[seat][index]
        del self.seqs[seat][index]

    def claim(self, seat: int) -> None:
        self._changed()
        self.claimed = seat
