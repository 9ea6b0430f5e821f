"""A SIGKILLed serve (or test process) leaves its socket directories behind: the next
process of the same user that makes one of the same kind removes them, and nothing
else (the directory of a process still running, another kind, a link)."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from battleline_engine.socket_dirs import FRESH_S, OWNER, private_socket_dir, remove_socket_dir


@pytest.fixture
def dead_pid() -> int:
    """The PID of a process that has exited."""
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


@pytest.fixture
def made() -> Iterator[list[Path]]:
    """Directories the test made in the temporary directory, removed at the end."""
    paths: list[Path] = []
    yield paths
    for path in paths:
        if path.is_symlink():
            path.unlink()
        elif path.exists():
            for child in path.iterdir():
                child.unlink()
            path.rmdir()


def _left(made: list[Path], name: str, socket: bool = True) -> Path:
    path = Path(tempfile.gettempdir()) / name
    path.mkdir(mode=0o700)
    made.append(path)
    if socket:
        (path / "redis.sock").write_bytes(b"")  # what a killed Redis may leave
    old = time.time() - 2 * FRESH_S  # left long ago (a new one may be about to be locked)
    os.utime(path, (old, old))
    return path


def test_a_killed_processs_directory_goes_and_a_running_ones_stays(
        dead_pid: int, made: list[Path]) -> None:
    orphan = _left(made, f"battleline-redis-{dead_pid}-testorph")
    running = _left(made, f"battleline-redis-{os.getppid()}-testlive")
    other_kind = _left(made, f"battleline-ai-{dead_pid}-testkind")
    target = _left(made, f"battleline-target-{dead_pid}", socket=False)
    link = Path(tempfile.gettempdir()) / f"battleline-redis-{dead_pid}-testlink"
    link.symlink_to(target)
    made.append(link)

    new = private_socket_dir("redis")
    made.append(new)

    assert not orphan.exists()
    assert running.exists() and other_kind.exists()
    assert link.is_symlink() and target.exists()
    assert new.name.startswith(f"battleline-redis-{os.getpid()}-")
    assert new.stat().st_mode & 0o777 == 0o700


def test_a_directory_whose_owner_holds_its_lock_stays_whatever_its_pid_says(
        dead_pid: int, made: list[Path]) -> None:
    """Twenty-sixth audit: a serve in another PID namespace sharing /tmp saw every other
    serve's PID as gone and removed their live socket directories. A directory goes only
    once nobody holds the lock its maker took."""
    elsewhere = _left(made, f"battleline-redis-{dead_pid}-testnspc")
    owner = os.open(elsewhere / OWNER, os.O_RDWR | os.O_CREAT, 0o600)
    being_made = Path(tempfile.gettempdir()) / f"battleline-redis-{dead_pid}-testfrsh"
    being_made.mkdir(mode=0o700)  # made a moment ago, not yet locked by its maker
    made.append(being_made)
    try:
        fcntl.flock(owner, fcntl.LOCK_EX)  # as its maker, alive in another namespace
        made.append(private_socket_dir("redis"))
        assert elsewhere.exists(), "a directory whose owner runs was removed"
        assert being_made.exists(), "a directory just made was removed before its lock"
    finally:
        os.close(owner)  # its maker is gone
    made.append(private_socket_dir("redis"))
    assert not elsewhere.exists()


def test_a_new_directory_is_locked_until_removed(made: list[Path]) -> None:
    path = private_socket_dir("ai")
    made.append(path)
    probe = os.open(path / OWNER, os.O_RDONLY)
    try:
        with pytest.raises(BlockingIOError):
            fcntl.flock(probe, fcntl.LOCK_SH | fcntl.LOCK_NB)
        remove_socket_dir(path)
        fcntl.flock(probe, fcntl.LOCK_SH | fcntl.LOCK_NB)  # let go with the directory
    finally:
        os.close(probe)
    assert not path.exists()
