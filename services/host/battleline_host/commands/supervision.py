"""Keeping serve's child processes alive: its other engines (`--workers`) and its AI."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

from battleline_client.backoff import backoff

log = logging.getLogger("battleline.serve")

QUICK_EXIT_S = 10.0  # a child exiting sooner than this after its start is crash-looping


async def keep_running(what: str, current: Callable[[], subprocess.Popen[Any]],
                       restart: Callable[[], Awaitable[None]], interval_s: float = 1.0) -> None:
    """Until cancelled: whenever the `current()` process has exited (a crash, the OOM
    killer, a SIGKILL), log it as an error and `restart()` it: serve went on without it,
    and said nothing (nineteenth audit; its AI, twenty-sixth). One that keeps exiting at
    once, or cannot be started (`restart` raises OSError, RuntimeError or TimeoutError:
    no descriptors or memory left, not ready in time), is tried again after a growing
    delay (up to a minute), never given up on; any other failure of `restart` is logged
    with its traceback and tried again the same way (the supervision must not end)."""
    delays: Iterator[float] | None = None
    started = time.monotonic()
    while True:
        await asyncio.sleep(interval_s)
        process = current()
        if process.poll() is None:  # poll() reaps a dead child
            continue
        log.error("%s exited: starting it again", what,
                  extra={"worker_pid": process.pid, "returncode": process.returncode})
        if time.monotonic() - started < QUICK_EXIT_S:
            delays = delays or backoff(1.0, 60.0)
            await asyncio.sleep(next(delays))
        else:
            delays = None
        started = time.monotonic()
        try:
            await restart()
        except (OSError, RuntimeError, TimeoutError) as err:
            log.error("%s could not be started: %s", what, err,
                      extra={"worker_pid": current().pid})
        except Exception:
            log.exception("%s could not be started", what, extra={"worker_pid": current().pid})
