#!/usr/bin/env python3
"""Generate the Python stubs of the public API from protos/ (and check they are fresh).

The generated files are committed so a plain `pip install` works without
grpc-tools; `--check` (run in CI) fails when they no longer match protos/.
"""

from __future__ import annotations

import argparse
import filecmp
import shutil
import sys
import sysconfig
import tempfile
from importlib import resources
from pathlib import Path

from grpc_tools import protoc

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "protos"
OUT_ROOT = ROOT / "clients" / "python" / "generated"
PACKAGE = Path("battleline") / "v1"
INIT_DOC = '"""Generated gRPC/protobuf code for the Battle Line API; never edit by hand."""\n'


def _plugin(name: str) -> str:
    """Path of a protoc plugin installed next to this Python (mypy-protobuf's)."""
    for folder in (Path(sys.executable).parent, Path(sysconfig.get_path("scripts"))):
        candidate = folder / name
        if candidate.exists():
            return str(candidate)
    found = shutil.which(name)
    if not found:
        raise SystemExit(f"{name} not found: pip install mypy-protobuf")
    return found


def generate(out_root: Path) -> None:
    """Run protoc over every .proto file into out_root (a package root)."""
    protos = sorted(str(p.relative_to(PROTO_ROOT)) for p in (PROTO_ROOT / PACKAGE).glob("*.proto"))
    if not protos:
        raise SystemExit(f"no .proto files under {PROTO_ROOT / PACKAGE}")
    well_known = str(resources.files("grpc_tools") / "_proto")
    args = [
        "protoc",
        f"--proto_path={PROTO_ROOT}",
        f"--proto_path={well_known}",
        f"--plugin=protoc-gen-mypy={_plugin('protoc-gen-mypy')}",
        f"--plugin=protoc-gen-mypy_grpc={_plugin('protoc-gen-mypy_grpc')}",
        f"--python_out={out_root}",
        f"--grpc_python_out={out_root}",
        f"--mypy_out={out_root}",
        f"--mypy_grpc_out={out_root}",
        *protos,
    ]
    (out_root / PACKAGE).mkdir(parents=True, exist_ok=True)
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed")
    for folder in (out_root / PACKAGE.parent, out_root / PACKAGE):
        (folder / "__init__.py").write_text(INIT_DOC)
        (folder / "py.typed").write_text("")


def _files(root: Path) -> set[Path]:
    """Generated files under root, relative to it."""
    return {
        p.relative_to(root)
        for p in (root / PACKAGE.parent).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }


def check() -> int:
    """Regenerate into a temp dir; return 1 and list the stale files if they differ."""
    with tempfile.TemporaryDirectory() as tmp:
        fresh_root = Path(tmp)
        generate(fresh_root)
        fresh, committed = _files(fresh_root), _files(OUT_ROOT)
        stale = sorted(str(p) for p in fresh ^ committed)
        stale += sorted(
            str(p)
            for p in fresh & committed
            if not filecmp.cmp(fresh_root / p, OUT_ROOT / p, shallow=False)
        )
    if stale:
        print("generated code is stale; run scripts/gen_protos.py:", *stale, sep="\n  ")
        return 1
    print("generated code is up to date")
    return 0


def main() -> int:
    """Entry point."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail if committed files are stale")
    if parser.parse_args().check:
        return check()
    target = OUT_ROOT / PACKAGE.parent
    if target.exists():
        shutil.rmtree(target)
    generate(OUT_ROOT)
    print(f"generated into {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
