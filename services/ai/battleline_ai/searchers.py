"""The search processes of the hosted AI's workers and of the AI service.

A module of its own, apart from `processes`: the compiled modules' types reach
`processes`, and the build that compiles them cannot see the client package.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from concurrent.futures import ProcessPoolExecutor

from battleline_client.processes import die_with_parent


def search_processes(processes: int) -> ProcessPoolExecutor:
    """An executor of fresh interpreters for searches, which die with this process even
    when it is SIGKILLed. Spawned, not forked: this process runs gRPC threads, which a
    fork would copy half-way."""
    return ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_start_search_process, initargs=(os.getpid(),))


def _start_search_process(parent: int) -> None:
    """Die with the worker (at once if it died while this process started); leave
    Ctrl-C to it: the terminal sends SIGINT to the whole process group, and each search
    process printed a KeyboardInterrupt traceback (a re-test) while the worker stopped
    them anyway."""
    die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
