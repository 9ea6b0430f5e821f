"""A line typed at the terminal, read so that Ctrl-C always interrupts the wait.

`input()` blocks in read(2), and Ctrl-C raises KeyboardInterrupt only if its signal
interrupts that read. One that lands after Python last looked for signals and before
the read began (a prompt just drawn on a busy machine), or one the kernel hands to
another thread (gRPC's), is noticed only after the next Enter: the player presses
Ctrl-C and nothing happens. Here the wait is a select(2) on the terminal and on a
signal wakeup pipe, which Python writes to for every signal it handles, whenever and
on whichever thread the signal lands.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import threading
from collections.abc import Iterator
from typing import TextIO


def read_line(stdin: TextIO | None = None) -> str:
    """The next line typed, without its newline, as `input()` returns it; EOFError at
    the end of input (Ctrl-D) or with no input at all (standard input closed). Bytes that
    are not text in the terminal's encoding read as U+FFFD: a move with them is refused
    as any unknown move (as they were, they ended `play` in a UnicodeEncodeError)."""
    stdin = stdin or sys.stdin
    if stdin is None:  # started with descriptor 0 closed: input() would raise RuntimeError
        raise EOFError("no standard input")
    data: bytes | str
    if (os.name == "posix" and threading.current_thread() is threading.main_thread()
            and stdin.isatty()):
        data = _typed(stdin.fileno())
    else:  # a pipe or a file: no prompt to race with
        data = stdin.buffer.readline() if hasattr(stdin, "buffer") else stdin.readline()
    if not data:
        raise EOFError
    text = data if isinstance(data, str) else data.decode(stdin.encoding or "utf-8", "replace")
    return text.rstrip("\r\n")


def _typed(fd: int) -> bytes:
    """What the terminal hands over once a line is typed (in canonical mode, one line)."""
    with _signal_wakeup() as woken:
        while True:
            ready, _, _ = select.select([fd, woken], [], [])
            if woken in ready:  # the handler (Ctrl-C's raises) runs at the next line
                with contextlib.suppress(BlockingIOError):
                    os.read(woken, 512)
            if fd in ready:
                return os.read(fd, 65536)


@contextlib.contextmanager
def _signal_wakeup() -> Iterator[int]:
    """The read end of a pipe that every signal handled by Python writes to, while the
    block runs (the previous wakeup descriptor, if any, is put back after)."""
    woken, wake = os.pipe()
    os.set_blocking(woken, False)
    os.set_blocking(wake, False)
    previous = signal.set_wakeup_fd(wake, warn_on_full_buffer=False)
    try:
        yield woken
    finally:
        signal.set_wakeup_fd(previous)
        os.close(woken)
        os.close(wake)
