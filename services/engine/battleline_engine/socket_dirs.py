"""Private directories for the Unix sockets a process serves on (its embedded Redis, its
hosted AI): owner-only, so no other local user can reach the socket or bind its name
first, and in the temporary directory, since a socket's path has at most 107 bytes.

A directory is named after the process that made it (`battleline-KIND-PID-xxxxxxxx`) and
removed when that process stops. One left by a process killed with SIGKILL is removed by
the next process of the same user that makes one of the same kind: its PID no longer runs.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path


def private_socket_dir(kind: str) -> Path:
    """A new directory (0700) for one socket of `kind` ("redis", "ai"), after removing
    this user's directories of that kind whose process no longer runs."""
    _remove_orphans(kind)
    return Path(tempfile.mkdtemp(prefix=f"battleline-{kind}-{os.getpid()}-"))


def _remove_orphans(kind: str) -> None:
    for path in Path(tempfile.gettempdir()).glob(f"battleline-{kind}-*-*"):
        pid = path.name.split("-")[2]
        if not pid.isdigit() or _running(int(pid)):
            continue
        try:
            info = path.lstat()
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid():
            shutil.rmtree(path, ignore_errors=True)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process has that PID
        return True
    return True
