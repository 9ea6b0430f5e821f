"""Private directories for the Unix sockets a process serves on (its embedded Redis, its
hosted AI): owner-only, so no other local user can reach the socket or bind its name
first, and in the temporary directory, since a socket's path has at most 107 bytes.

A directory is named after the process that made it (`battleline-KIND-PID-xxxxxxxx`) and
removed when that process stops. One left by a process killed with SIGKILL is removed by
the next process of the same user that makes one of the same kind. Its maker holds a lock
on a file in it for as long as it runs, and a directory is left alone while anyone holds
that lock: a PID tells nothing across PID namespaces sharing one /tmp (a serve in a
container saw every other serve's PID as gone, and removed their live sockets:
twenty-sixth audit). A directory without the file (made before it) goes by its PID.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import stat
import tempfile
import time
from pathlib import Path

OWNER = ".owner"  # the file its maker holds a lock on
FRESH_S = 60.0  # a directory without the file, younger than this, is left alone
_held: dict[Path, int] = {}  # this process's directories and their locks, held meanwhile


def private_socket_dir(kind: str) -> Path:
    """A new directory (0700) for one socket of `kind` ("redis", "ai"), after removing
    this user's directories of that kind whose process no longer runs."""
    _remove_orphans(kind)
    path = Path(tempfile.mkdtemp(prefix=f"battleline-{kind}-{os.getpid()}-"))
    owner = os.open(path / OWNER, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(owner, fcntl.LOCK_EX)
    _held[path] = owner
    return path


def remove_socket_dir(path: Path) -> None:
    """Remove one of this process's directories, and let go of its lock."""
    shutil.rmtree(path, ignore_errors=True)
    owner = _held.pop(path, None)
    if owner is not None:
        os.close(owner)


def _remove_orphans(kind: str) -> None:
    for path in Path(tempfile.gettempdir()).glob(f"battleline-{kind}-*-*"):
        pid = path.name.split("-")[2]
        try:
            info = path.lstat()
        except OSError:
            continue
        if not (pid.isdigit() and stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid()):
            continue
        owned = _owned(path / OWNER)
        if owned is None and time.time() - info.st_mtime < FRESH_S:
            continue  # its maker may be between making it and locking it
        if not (_running(int(pid)) if owned is None else owned):
            shutil.rmtree(path, ignore_errors=True)


def _owned(owner: Path) -> bool | None:
    """Whether a running process holds the directory's lock; None if it has no lock file."""
    try:
        fd = os.open(owner, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError:
        return True  # unreadable: not ours to judge
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process has that PID
        return True
    return True
