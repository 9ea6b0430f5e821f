"""Logging follows sys.stderr: a stream swapped and closed after `logs.configure` (as a
test runner or an embedding host does) is never written to again."""

from __future__ import annotations

import io
import json
import logging
import sys

import pytest

from battleline_engine import logs


def test_records_go_to_the_stderr_of_the_moment(monkeypatch: pytest.MonkeyPatch) -> None:
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    first = io.StringIO()
    monkeypatch.setattr(sys, "stderr", first)
    try:
        logs.configure(logs.LogLevel.INFO, logs.LogFormat.JSON)
        first.close()  # the stream logging was configured with goes away
        second = io.StringIO()
        monkeypatch.setattr(sys, "stderr", second)
        logging.getLogger("battleline.test").info("after the swap")
        lines = [json.loads(line) for line in second.getvalue().splitlines()]
        assert [line["message"] for line in lines] == ["after the swap"]
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
