"""Stopping child processes, the one way every part of the project does it.

Standard library only: the light client (hosting a local `battleline serve`), the
server commands, the engine's embedded Redis and the AI service all use it.
"""

from __future__ import annotations

import signal
import subprocess
from typing import Any


def stop_processes(*processes: subprocess.Popen[Any], timeout_s: float = 10.0) -> None:
    """SIGTERM to every one still running (so they stop together, and each can flush
    and take its leave), then SIGKILL whichever has not exited `timeout_s` after that.
    Returns once all have exited."""
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
