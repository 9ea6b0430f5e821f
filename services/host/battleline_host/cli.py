"""What the server distribution adds to the `battleline` command (its entry point in
the ``battleline.commands`` group; see battleline_client.commands.server)."""

import typer

from .commands.ai import ai
from .commands.serve import serve
from .commands.tournament import tournament
from .commands.web import web


def register(app: typer.Typer) -> None:
    """Add serve, ai, tournament and web to ``app``."""
    for command in (ai, serve, tournament, web):
        app.command()(command)
