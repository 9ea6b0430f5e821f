"""Worker processes for searches and tournaments."""

from __future__ import annotations

import multiprocessing
import multiprocessing.pool


def spawned_pool(processes: int) -> multiprocessing.pool.Pool:
    """A pool of fresh interpreters. Not forked: a fork copies the state of the caller's
    threads (a gRPC client or server in the same process), and a forked child that then
    collected an object whose finalizer joins such a thread hung (seen in the tests)."""
    return multiprocessing.get_context("spawn").Pool(processes)
