"""Logging follows sys.stderr: a stream swapped and closed after `logs.configure` (as a
test runner or an embedding host does) is never written to again."""

from __future__ import annotations

import io
import json
import logging
import os
import re
import sys
from collections.abc import Iterator

import pytest

from battleline_engine import logs

from .harness import Engine
from .test_transport_limits import (
    DATA,
    END_HEADERS,
    HEADERS,
    _frame,
    _grpc_message,
    _http2,
    _literal,
)

END_STREAM = 0x1


@pytest.fixture
def configured() -> Iterator[None]:
    """Logging configured as every process of the service does (`logs.configure`, JSON);
    the root logger as it was afterwards. Records go to the sys.stderr of the moment,
    which a test swaps within its own call (pytest swaps it again between phases)."""
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    try:
        logs.configure(logs.LogLevel.INFO, logs.LogFormat.JSON)
        yield
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])


def test_records_go_to_the_stderr_of_the_moment(configured: None,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    first = io.StringIO()
    monkeypatch.setattr(sys, "stderr", first)
    logging.getLogger("battleline.test").info("before the swap")
    first.close()  # the stream of the first record goes away
    second = io.StringIO()
    monkeypatch.setattr(sys, "stderr", second)
    logging.getLogger("battleline.test").info("after the swap")
    lines = [json.loads(line) for line in second.getvalue().splitlines()]
    assert [line["message"] for line in lines] == ["after the swap"]


@pytest.mark.parametrize("fmt", list(logs.LogFormat))
def test_a_line_says_when_in_utc_which_process_and_every_extra_field(
        fmt: logs.LogFormat, monkeypatch: pytest.MonkeyPatch) -> None:
    """An operator's text log said "engine listening" without the address, its JSON a
    time to the second with no zone, and the processes of `serve --workers 2` could not
    be told apart."""
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    out = io.StringIO()
    monkeypatch.setattr(sys, "stderr", out)
    try:
        logs.configure(logs.LogLevel.INFO, fmt)
        logging.getLogger("battleline.test").info(
            "engine listening", extra={"address": "127.0.0.1:50051", "tls": False})
        if fmt is logs.LogFormat.JSON:  # a call's field of the same name does not replace it
            logging.getLogger("battleline.test").info("worker", extra={"pid": 1})
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
    line, *rest = out.getvalue().strip().splitlines()
    if fmt is logs.LogFormat.JSON:
        assert [json.loads(other)["pid"] for other in rest] == [os.getpid()]
        record = json.loads(line)
        stamp, pid = record["time"], record["pid"]
        assert record["address"] == "127.0.0.1:50051" and record["tls"] is False
    else:
        stamp, pid = line.split(" ", 1)[0], int(line.split("[", 1)[1].split("]", 1)[0])
        assert line.endswith("engine listening (address=127.0.0.1:50051 tls=False)"), line
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", stamp), stamp
    assert pid == os.getpid()


def test_a_metadata_value_that_is_not_utf8_is_logged_without_its_bytes(
        engine: Engine, configured: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Sixth audit: grpc logged such a value at error level, with up to 1 KB of the
    caller's bytes and a traceback, for every call carrying one."""
    stderr = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stderr)
    with _http2(engine.address) as (frames, _):
        value = b"MARKER\x7f\x81\xff"
        frames.sock.sendall(_frame(HEADERS, END_HEADERS, 1, b"".join([
            _literal(":method", "POST"), _literal(":scheme", "http"),
            _literal(":path", "/battleline.v1.LobbyService/ListOpenMatches"),
            _literal(":authority", engine.address),
            _literal("content-type", "application/grpc"), _literal("te", "trailers"),
            b"\x00\x05x-abc" + bytes([len(value)]) + value])))
        frames.sock.sendall(_frame(DATA, END_STREAM, 1, _grpc_message(b"")))
        while (frame := frames.next()) is not None and not (
                frame[0] == HEADERS and frame[1] & END_STREAM):
            pass  # until the call's trailers
    lines = [json.loads(line) for line in stderr.getvalue().splitlines()]
    mentions = [line for line in lines if "UTF-8" in line["message"]]
    assert mentions and all(line["level"] == "warning" and "error" not in line
                            for line in mentions)
    assert "MARKER" not in stderr.getvalue()
