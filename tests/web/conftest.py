"""A real `battleline serve` (engine, embedded Redis, hosted AI, web gateway with the built
page) for the module, and Debian's Chromium with a fresh profile for each test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import BrowserContext, sync_playwright

from tests.processes import start_serve, stop_serve, web_url

from .pages import Service

CHROMIUM = "/usr/bin/chromium"  # Debian's package: Playwright never downloads a browser here
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    folder = tmp_path_factory.mktemp("serve")
    with (folder / "serve.log").open("w") as log:
        process, engine = start_serve("--web-port", "0", "--data-dir", str(folder / "data"),
                                      env={"REDIS_URL": ""}, stderr=log)
    try:
        yield Service(web_url(process), engine)
    finally:
        stop_serve(process)


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[BrowserContext]:
    """Chromium with a fresh profile of its own; each page has its own sessionStorage."""
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"), executable_path=CHROMIUM, headless=True,
            args=CHROMIUM_ARGS, viewport={"width": 1280, "height": 800},
        )
        try:
            yield context
        finally:
            context.close()
