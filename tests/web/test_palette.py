"""The page's six troop colours stay apart for colour-blind players (issue #15: red looked
like orange): each pair of colours, as seen with protanopia, deuteranopia or tritanopia
(Machado, Oliveira and Fernandes 2009, full severity), differs by at least MIN_DISTANCE in
CIELAB, and red and orange by much more. The colours are read from the page's style sheet.
No browser: the simulation is a matrix on linear RGB."""

from __future__ import annotations

import itertools
import math
import re
from pathlib import Path

STYLE = Path(__file__).parents[2] / "clients" / "web" / "src" / "style.css"
MIN_DISTANCE = 15.0  # CIE76 Delta E: about 2.3 is just noticeable; 15 is plainly different
MIN_RED_ORANGE = 35.0  # the pair the issue names (the old #d55e00/#e69f00 pair: 18 for deutans)

# Linear RGB -> linear RGB as a dichromat sees it (Machado et al. 2009, severity 1.0).
VISION = {
    "typical": ((1, 0, 0), (0, 1, 0), (0, 0, 1)),
    "protanopia": ((0.152286, 1.052583, -0.204868), (0.114503, 0.786281, 0.099216),
                   (-0.003882, -0.048116, 1.051998)),
    "deuteranopia": ((0.367322, 0.860646, -0.227968), (0.280085, 0.672501, 0.047413),
                     (-0.011820, 0.042940, 0.968881)),
    "tritanopia": ((1.255528, -0.076749, -0.178779), (-0.078411, 0.930809, 0.147602),
                   (0.004733, 0.691367, 0.303900)),
}


def troop_colours() -> dict[str, str]:
    found = re.findall(r"\.troop-([A-Z]) \{ background: (#[0-9a-f]{6});", STYLE.read_text())
    return dict(found)


def _linear(hex_colour: str) -> tuple[float, ...]:
    channels = (int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5))
    return tuple(c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)


def _lab(rgb: tuple[float, ...]) -> tuple[float, float, float]:
    r, g, b = rgb
    xyz = (0.4124 * r + 0.3576 * g + 0.1805 * b, 0.2126 * r + 0.7152 * g + 0.0722 * b,
           0.0193 * r + 0.1192 * g + 0.9505 * b)
    fx, fy, fz = (t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116
                  for t in (xyz[0] / 0.95047, xyz[1], xyz[2] / 1.08883))
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)


def seen(hex_colour: str, vision: str) -> tuple[float, float, float]:
    """The colour in CIELAB as someone with this vision sees it."""
    rgb = _linear(hex_colour)
    matrix = VISION[vision]
    simulated = tuple(min(1.0, max(0.0, sum(m * c for m, c in zip(row, rgb, strict=True))))
                      for row in matrix)
    return _lab(simulated)


def test_troop_colours_stay_apart_in_every_kind_of_colour_vision() -> None:
    colours = troop_colours()
    assert sorted(colours) == ["B", "G", "O", "P", "R", "Y"], colours
    for vision in VISION:
        lab = {letter: seen(hex_colour, vision) for letter, hex_colour in colours.items()}
        for a, b in itertools.combinations(sorted(lab), 2):
            distance = math.dist(lab[a], lab[b])
            assert distance >= MIN_DISTANCE, (vision, a, b, round(distance, 1))
        assert math.dist(lab["R"], lab["O"]) >= MIN_RED_ORANGE, vision


def test_the_check_tells_the_old_red_from_the_new() -> None:
    """The old vermilion red (#d55e00) fails the red-orange bound for deutans."""
    old = math.dist(seen("#d55e00", "deuteranopia"), seen("#e69f00", "deuteranopia"))
    assert old < MIN_RED_ORANGE
