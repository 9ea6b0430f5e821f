"""Reading the player's line so that Ctrl-C always interrupts the wait (a clean-clone CI
run: `battleline play` sat at its move prompt for a minute after a Ctrl-C that landed
just before it began to read). Each case runs a real process on a real pseudo-terminal."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import textwrap

import pytest

# The child reads one line; a thread of its own takes SIGINT (as a signal the kernel
# hands to one of gRPC's threads, or one handled before the read began, is never seen
# by a read already blocked in the main thread).
CHILD = textwrap.dedent("""
    import signal, sys, threading, time
    from battleline_client.typed_line import read_line

    signal.signal(signal.SIGINT, signal.default_int_handler)
    if sys.argv[1] == "interrupt":
        def interrupt_this_thread():
            time.sleep(0.5)
            signal.pthread_kill(threading.get_ident(), signal.SIGINT)
        threading.Thread(target=interrupt_this_thread, daemon=True).start()
    print("waiting", flush=True)
    try:
        print("read", repr(read_line()), flush=True)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
    except EOFError:
        print("end of input", flush=True)
""")


def _run(case: str, typed: bytes = b"") -> str:
    """What the child printed after reading from a terminal given `typed`."""
    leader, follower = pty.openpty()
    try:
        child = subprocess.Popen([sys.executable, "-c", CHILD, case], stdin=follower,
                                 stdout=subprocess.PIPE, text=True)
        assert child.stdout is not None
        assert child.stdout.readline() == "waiting\n"
        if typed:
            os.write(leader, typed)
        try:
            out, _ = child.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.communicate()
            pytest.fail(f"{case}: the read did not end within 10 s")
        return out.strip()
    finally:
        os.close(leader)
        os.close(follower)


def test_a_signal_on_another_thread_interrupts_the_wait() -> None:
    assert _run("interrupt") == "interrupted"


@pytest.mark.parametrize(("typed", "shown"), [
    (b"R7 3\n", "read 'R7 3'"), (b"\n", "read ''"), ("é 5\n".encode(), "read 'é 5'"),
    (b"\x04", "end of input"),  # Ctrl-D at the start of a line
    (b"\xff\xfe 3\n", "read '\ufffd\ufffd 3'"),  # not UTF-8: it ended play in an error
])
def test_a_typed_line_is_read_as_input_reads_it(typed: bytes, shown: str) -> None:
    assert _run("read", typed) == shown


def test_no_standard_input_at_all_is_the_end_of_input() -> None:
    """Started with descriptor 0 closed (`exec 0<&-`), `play` died of an AttributeError
    and left its match running; the end of input resigns it."""
    done = subprocess.run(["sh", "-c", f'exec 0<&-; exec "{sys.executable}" -c "$0" read',
                           CHILD], capture_output=True, text=True, timeout=60)
    assert done.stdout.split("\n")[-2:] == ["end of input", ""], done.stdout + done.stderr


def test_a_line_from_a_pipe_is_read_as_typed() -> None:
    done = subprocess.run([sys.executable, "-c", CHILD, "read"], input=b"\xff R7 3\nnext\n",
                          capture_output=True, timeout=60)
    assert done.stdout.decode().split("\n")[-2] == "read '\ufffd R7 3'", done.stderr
