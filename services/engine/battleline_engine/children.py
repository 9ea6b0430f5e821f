"""Child processes that must not outlive the process that started them."""

from __future__ import annotations

import signal
import sys


def die_with_parent() -> None:
    """preexec_fn for children: SIGTERM them when the parent dies, even by SIGKILL (Linux).

    A killed `battleline serve` then leaves no embedded Redis holding its data
    directory and no AI worker playing on. The signal follows the thread that
    started the child, so start children from a thread that lives as long as
    the process (the main thread).
    """
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
