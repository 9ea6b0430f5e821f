"""The layering, checked in fresh interpreters: the domain loads no grpc and no protobuf
messages, storage no grpc, the rules core neither grpc nor Redis; and, read from the
sources, the client package imports nothing of the server, not even lazily.

Each module is imported alone (`python -c`), so a module some other test imported
first cannot hide an import, and a new `import grpc` anywhere under a domain module
fails here."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import battleline_client
import battleline_host

DOMAIN = ["errors", "model", "clocks", "matches", "seating", "hub", "sweeper"]
GRPC = ("grpc", "google.protobuf", "google.rpc", "grpc_status")
REDIS = ("redis", "hiredis")
SERVER = ("battleline_engine", "battleline_ai", "battleline_gateway", "battleline_host")


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


def imported_names(package: Path) -> dict[str, set[str]]:
    """Every module each source file under `package` imports, wherever the statement
    stands (inside functions too), read from its syntax tree."""
    found: dict[str, set[str]] = {}
    for path in package.rglob("*.py"):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module)
        found[str(path.relative_to(package.parent))] = names
    return found


def server_imports(package: Path) -> dict[str, list[str]]:
    return {path: sorted(offending(sorted(names), SERVER))
            for path, names in imported_names(package).items() if offending(sorted(names), SERVER)}


def test_the_client_package_imports_nothing_of_the_server() -> None:
    client = Path(battleline_client.__file__).parent
    assert len(imported_names(client)) >= 15
    assert server_imports(client) == {}


def test_the_source_check_sees_server_imports_where_they_are() -> None:
    """The server's hosting package does import the engine: the check above can fail."""
    found = server_imports(Path(battleline_host.__file__).parent)
    assert any("battleline_engine.server" in names for names in found.values()), found
