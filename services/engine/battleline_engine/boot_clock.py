"""Seconds on a clock that never steps and runs while the machine sleeps.

Python's monotonic clock stops while a machine is suspended, so a time counted on it
falls behind by the nap: a cache trusted for a day would be trusted for the days a laptop
slept, and the store's time (`storage.connection.StoreClock`) would lag until its next
sync. Linux's boot clock counts the sleep; elsewhere the monotonic clock stands in."""

from __future__ import annotations

import time
from typing import Final

_BOOT: Final = getattr(time, "CLOCK_BOOTTIME", None)  # Linux
HAS_BOOT_CLOCK: Final = _BOOT is not None


def boot_clock() -> float:
    """Seconds since boot, sleep included (Linux); elsewhere the monotonic clock's."""
    return time.clock_gettime(_BOOT) if _BOOT is not None else time.monotonic()
