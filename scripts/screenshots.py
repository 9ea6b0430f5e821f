"""Regenerate the README's pictures, docs/screenshots/*.png, from the browser tests.

The pictures are taken by the tests themselves (tests/web/pages.py `shoot`, when
BATTLELINE_SCREENSHOTS names a folder), so they show the page as the tests see it: a game
against the hosted AI at desktop width (1280x800: lobby, start, mid, claim, end) and a game
at a phone's width (390x844: phone-lobby, phone-mid, phone-end). Needs what tests/web needs
(Debian's Chromium, scripts/install_test_tools.sh). Run from anywhere:
`python scripts/screenshots.py`; it exits with pytest's status.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "docs" / "screenshots"
TESTS = ["tests/web/test_browser.py", "tests/web/test_layout.py"]


def main() -> int:
    env = {**os.environ, "BATTLELINE_SCREENSHOTS": str(FOLDER)}
    return subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            *TESTS], cwd=ROOT, env=env)


if __name__ == "__main__":
    sys.exit(main())
