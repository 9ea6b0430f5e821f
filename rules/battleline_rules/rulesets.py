"""Rulesets as small declarative objects, plus per-match options.

Adding a ruleset means adding one `Ruleset` value: the game code reads only
these fields and the two hooks (`victory`, category order).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from enum import Enum
from typing import Any, Final

from .cards import COLOUR, DECK52_CARDS, STANDARD_TROOPS, TACTICS, VALUE, mask_of
from .outcome import Termination


def _constructor_args(value: Any) -> tuple[Any, ...]:
    """A dataclass's `__init__` arguments, in order: what its `__reduce__` pickles. The
    compiled classes (setup.py) are only built through their constructors."""
    return tuple(getattr(value, f.name) for f in fields(value) if f.init)


class Category(Enum):
    """The predicates a formation can satisfy; a ruleset ranks them."""

    RUN_FLUSH = "run-flush"  # same colour, consecutive values
    KIND = "kind"  # same value
    FLUSH = "flush"  # same colour
    RUN = "run"  # consecutive values
    ANY = "any"  # anything (and everything under Fog)


class ClaimTiming(Enum):
    """When the player to act may claim flags."""

    AFTER_PLAY = "after-play"
    START_OF_TURN = "start-of-turn"


@dataclass(frozen=True, slots=True)
class Ruleset:
    """Everything that differs between the rulesets the service offers."""

    name: str
    troops: tuple[int, ...]
    tactics: tuple[int, ...]
    flags: int
    hand_size: int
    colours: int
    min_value: int
    max_value: int
    # Strongest first; index 0 is the best category.
    categories: tuple[Category, ...]
    category_names: tuple[str, ...]
    hidden_removed: int = 0
    # The hand sizes a match may choose instead of `hand_size` (basic: 7, as seed 001
    # plays it); empty: fixed.
    hand_sizes: tuple[int, ...] = ()
    # deck52: a complete side wins at once against a side with no card.
    empty_side_loses: bool = False
    # deck52: claims allowed before playing as well as after (002: "any time in one's
    # turn"); the start-of-turn option, offered on every ruleset, still limits them to
    # before playing.
    claim_any_time: bool = False
    envelopment: int = 5
    breakthrough: int = 3
    flank_pairs: bool = False
    troop_mask: int = field(init=False)
    # value_masks[v]: the troop cards of value v; colour_masks[c]: of colour c.
    value_masks: tuple[int, ...] = field(init=False)
    colour_masks: tuple[int, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "troop_mask", mask_of(self.troops))
        object.__setattr__(
            self,
            "value_masks",
            tuple(
                mask_of(c for c in self.troops if VALUE[c] == v) for v in range(self.max_value + 1)
            ),
        )
        object.__setattr__(
            self,
            "colour_masks",
            tuple(
                mask_of(c for c in self.troops if COLOUR[c] == colour)
                for colour in range(self.colours)
            ),
        )

    def __reduce__(self) -> tuple[type[Ruleset], tuple[Any, ...]]:
        return Ruleset, _constructor_args(self)

    def victory(self, flags_held: list[int]) -> Termination | None:
        """How holding these flag indexes (0-based) wins the game (None: it does not);
        a breakthrough first, then an envelopment, then flanks, when several apply."""
        held = set(flags_held)
        run = 0
        for flag in range(self.flags):
            run = run + 1 if flag in held else 0
            if run >= self.breakthrough:
                return Termination.BREAKTHROUGH
        if len(held) >= self.envelopment:
            return Termination.ENVELOPMENT
        last = self.flags - 1
        if self.flank_pairs and ({0, 1} <= held or {last - 1, last} <= held):
            return Termination.FLANKS
        return None

    def has_won(self, flags_held: list[int]) -> bool:
        """Whether holding these flag indexes (0-based) wins the game."""
        return self.victory(flags_held) is not None


STANDARD: Final = Ruleset(
    name="standard",
    troops=STANDARD_TROOPS,
    tactics=TACTICS,
    flags=9,
    hand_size=7,
    colours=6,
    min_value=1,
    max_value=10,
    categories=(Category.RUN_FLUSH, Category.KIND, Category.FLUSH, Category.RUN, Category.ANY),
    category_names=("wedge", "phalanx", "battalion", "skirmish", "host"),
)

BASIC: Final = replace(STANDARD, name="basic", tactics=(), hand_size=6, hand_sizes=(6, 7))

DECK52: Final = Ruleset(
    name="deck52",
    troops=DECK52_CARDS,
    tactics=(),
    flags=8,
    hand_size=6,
    colours=4,
    min_value=2,
    max_value=13,
    categories=(Category.RUN_FLUSH, Category.KIND, Category.RUN, Category.FLUSH, Category.ANY),
    category_names=("straight flush", "three of a kind", "straight", "flush", "other"),
    hidden_removed=2,
    empty_side_loses=True,
    claim_any_time=True,
    envelopment=4,
    breakthrough=3,
    flank_pairs=True,
)

RULESETS: Final[dict[str, Ruleset]] = {r.name: r for r in (STANDARD, BASIC, DECK52)}


@dataclass(frozen=True, slots=True)
class Options:
    """Per-match options that apply on top of a ruleset."""

    claim_timing: ClaimTiming = ClaimTiming.AFTER_PLAY
    # None keeps the ruleset's hand size; else one of its `hand_sizes`.
    hand_size: int | None = None
    first_player: int = 0

    def __reduce__(self) -> tuple[type[Options], tuple[Any, ...]]:
        return Options, _constructor_args(self)

    def text(self) -> str:
        """Options in the position notation: ``claim=after-play hand=7 first=0``."""
        parts = [f"claim={self.claim_timing.value}"]
        if self.hand_size is not None:
            parts.append(f"hand={self.hand_size}")
        parts.append(f"first={self.first_player}")
        return " ".join(parts)

    @classmethod
    def parse(cls, tokens: list[str]) -> Options:
        """Inverse of `text`; unknown keys raise ValueError."""
        values: dict[str, str] = {}
        for token in tokens:
            key, sep, value = token.partition("=")
            if not sep or key not in {"claim", "hand", "first"}:
                raise ValueError(f"unknown option {token!r}: use claim=, hand=, first=")
            values[key] = value
        return cls(
            claim_timing=ClaimTiming(values.get("claim", ClaimTiming.AFTER_PLAY.value)),
            hand_size=int(values["hand"]) if "hand" in values else None,
            first_player=int(values.get("first", "0")),
        )


def validate_options(ruleset: Ruleset, options: Options) -> None:
    """Raise ValueError for options a ruleset does not allow."""
    if options.hand_size is not None and options.hand_size not in ruleset.hand_sizes:
        where = "; ".join(
            f"in {r.name}, to {' or '.join(map(str, r.hand_sizes))}"
            for r in RULESETS.values()
            if r.hand_sizes
        )
        raise ValueError(f"hand size can only be changed {where}")
    if options.first_player not in (0, 1):
        raise ValueError("first player must be seat 0 or 1")
