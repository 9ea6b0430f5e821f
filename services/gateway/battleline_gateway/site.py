"""The whole web app: the bridge under `/battleline.v1.*`, the built page everywhere else."""

from __future__ import annotations

from pathlib import Path

from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles
from starlette.types import Receive, Scope, Send

from .bridge import EngineBridge

# The page built from clients/web (`npm run build` writes here); shipped in the package.
SITE_DIR = Path(__file__).parent / "site"
RPC_PREFIX = "/battleline.v1."


class WebApp:
    """ASGI app: RPC paths go to the bridge, the rest to the static page."""

    def __init__(self, bridge: EngineBridge, site_dir: Path = SITE_DIR) -> None:
        self.bridge = bridge
        # Inside a Starlette app so a missing file is a 404 response, not an exception.
        self.page = Starlette(routes=[Mount("/", StaticFiles(directory=site_dir, html=True))])

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].startswith(RPC_PREFIX):
            await self.bridge(scope, receive, send)
        else:
            await self.page(scope, receive, send)
