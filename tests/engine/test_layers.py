"""The layering, checked in fresh interpreters: the domain loads no grpc and no protobuf
messages, storage no grpc, the rules core neither grpc nor Redis.

Each module is imported alone (`python -c`), so a module some other test imported
first cannot hide an import, and a new `import grpc` anywhere under a domain module
fails here."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

DOMAIN = ["errors", "model", "clocks", "matches", "hub", "sweeper"]
GRPC = ("grpc", "google.protobuf", "google.rpc", "grpc_status")
REDIS = ("redis", "hiredis")


def loaded_after_import(module: str) -> list[str]:
    """Every module loaded by importing `module` in a fresh interpreter."""
    code = f"import sys, json, {module}; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60)
    return list(json.loads(out.stdout))


def offending(loaded: list[str], roots: tuple[str, ...]) -> list[str]:
    """The modules under `roots`, and every generated protobuf module."""
    return [m for m in loaded
            if m.endswith("_pb2") or any(m == r or m.startswith(r + ".") for r in roots)]


@pytest.mark.parametrize("name", DOMAIN)
def test_domain_modules_import_no_grpc_or_protobuf(name: str) -> None:
    loaded = loaded_after_import(f"battleline_engine.{name}")
    assert f"battleline_engine.{name}" in loaded
    assert offending(loaded, GRPC) == []


def test_storage_imports_no_grpc() -> None:
    loaded = loaded_after_import("battleline_engine.storage")
    assert "redis" in loaded
    assert offending(loaded, GRPC) == []


def test_rules_core_imports_no_grpc_or_redis() -> None:
    loaded = loaded_after_import("battleline_rules")
    assert offending(loaded, GRPC + REDIS) == []


def test_the_check_sees_grpc_where_it_is() -> None:
    """The servicers do load grpc and messages: the check above can fail."""
    loaded = loaded_after_import("battleline_engine.game")
    assert "grpc" in loaded and any(m.endswith("_pb2") for m in loaded)
    assert offending(loaded, GRPC)
