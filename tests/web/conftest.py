"""A real `battleline serve` (engine, embedded Redis, hosted AI, web gateway with the built
page) for the module, and Debian's Chromium with a fresh profile for each test."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import BrowserContext, sync_playwright

from .pages import Service

BATTLELINE = str(Path(sys.executable).parent / "battleline")
CHROMIUM = "/usr/bin/chromium"  # Debian's package: Playwright never downloads a browser here
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    folder = tmp_path_factory.mktemp("serve")
    log = folder / "serve.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            [BATTLELINE, "serve", "--port", "0", "--web-port", "0", "--grace", "1",
             "--data-dir", str(folder / "data")],
            stdout=out, stderr=subprocess.STDOUT, text=True, env={**os.environ, "REDIS_URL": ""},
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            text = log.read_text()
            web = re.search(r"web page at (http://\S+)", text)
            engine = re.search(r"engine listening on (\S+)", text)
            if web and engine:
                break
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"serve gave no web address:\n{text}")
            time.sleep(0.1)
        yield Service(web.group(1), engine.group(1))
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[BrowserContext]:
    """Chromium with a fresh profile of its own; each page has its own sessionStorage."""
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"), executable_path=CHROMIUM, headless=True,
            args=CHROMIUM_ARGS, viewport={"width": 1280, "height": 900},
        )
        try:
            yield context
        finally:
            context.close()
