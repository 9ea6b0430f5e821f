"""Structured logs: one JSON object per line, with the `extra` fields of each call.

Nothing secret may be logged at info level (no tokens, hands or deck order);
callers pass ids and counts, never states.
"""

from __future__ import annotations

import datetime
import enum
import json
import logging
import sys
import time
from typing import Final, TextIO

_STANDARD: Final = frozenset(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {
    "message", "asctime", "taskName",
}


class LogLevel(enum.StrEnum):
    """The least severe level a process logs."""

    DEBUG = "debug"
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


class LogFormat(enum.StrEnum):
    """`json`, one object per line for a log collector, or `text` for a terminal."""

    JSON = "json"
    TEXT = "text"


def _extra(record: logging.LogRecord) -> dict[str, object]:
    """The fields a call passed in `extra` (an address, a data directory, a count)."""
    return {k: v for k, v in record.__dict__.items() if k not in _STANDARD}


def _utc(record: logging.LogRecord) -> str:
    """The record's time in UTC to the millisecond, ISO 8601 (`2026-12-05T12:33:37.125Z`):
    the lines of several processes and hosts sort and line up."""
    moment = datetime.datetime.fromtimestamp(record.created, datetime.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class JsonFormatter(logging.Formatter):
    """Formats a record as JSON: time, level, logger, process, message, then any extra
    fields."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, object] = {
            "time": _utc(record),
            "level": record.levelname.lower(),
            "logger": record.name,
            "pid": record.process,  # which process of `serve --workers N` said it
            "message": record.getMessage(),
        }
        out.update({k: v for k, v in _extra(record).items() if k not in out})  # ours first
        if record.exc_info:
            out["error"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)


class TextFormatter(logging.Formatter):
    """A line for a terminal: time, level, logger, process, message, then the extra fields
    as key=value (an operator's text log said "engine listening" but not where)."""

    def format(self, record: logging.LogRecord) -> str:
        line = (f"{_utc(record)} {record.levelname} {record.name}[{record.process}]: "
                f"{record.getMessage()}")
        extra = " ".join(f"{key}={value}" for key, value in _extra(record).items())
        if extra:
            line += f" ({extra})"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


class RepeatFilter(logging.Filter):
    """At most `burst` records of one logger, level and message template per `window_s`;
    the first let through after a cut says how many were dropped (`suppressed`).

    A flood of one event (junk requests, a full web port, a failing dependency) then
    costs a few lines instead of filling the disk.
    """

    def __init__(self, burst: int = 10, window_s: float = 10.0, max_keys: int = 1000) -> None:
        super().__init__()
        self.burst = burst
        self.window_s = window_s
        self.max_keys = max_keys
        self._seen: dict[tuple[str, int, str], tuple[float, int, int]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.name, record.levelno, str(record.msg))
        now = time.monotonic()
        start, count, dropped = self._seen.get(key, (now, 0, 0))
        if now - start >= self.window_s:
            start, count = now, 0
        if count >= self.burst:
            self._seen[key] = (start, count, dropped + 1)
            return False
        if dropped:
            record.suppressed = dropped
        if len(self._seen) >= self.max_keys and key not in self._seen:
            self._seen = {k: v for k, v in self._seen.items() if now - v[0] < self.window_s}
        self._seen[key] = (start, count + 1, 0)
        return True


class CallerBytesFilter(logging.Filter):
    """grpc logs a metadata value that is not UTF-8 as an error, with up to a kilobyte
    of the caller's bytes and a traceback, though the call goes on: keep the event as a
    warning, without the bytes."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name == "grpc._cython.cygrpc" and str(record.msg).startswith(
                "Invalid encoding"):
            record.msg, record.args = "a call's metadata value is not UTF-8 (not logged)", ()
            record.exc_info, record.exc_text = None, None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


class StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is when a record is emitted, not the stream of
    the moment logging was configured: a command run in-process (a test runner, an
    embedding host) may swap and close that stream while server threads still log."""

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, _value: object) -> None:
        """StreamHandler sets its stream at start; this handler always asks sys."""


def configure(level: LogLevel = LogLevel.INFO, fmt: LogFormat = LogFormat.JSON) -> None:
    """Route all logging to stderr in the chosen format, repeats cut short. Every
    process of the service (engines, web gateways, AI services and their workers)
    logs this way, so one collector reads them all and no flood fills a disk."""
    handler = StderrHandler()
    handler.addFilter(CallerBytesFilter())
    handler.addFilter(RepeatFilter())
    if fmt is LogFormat.JSON:
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.value.upper())
