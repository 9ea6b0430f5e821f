"""What the commands that run server code (serve, ai, tournament, web; loadtest with no
--target) do first: where only the client distribution (battleline-client) is installed,
say what to install instead of failing on an import."""

from __future__ import annotations

import typer

from ..hosting import ServerNotInstalled, require_server


def needs_server(command: str) -> None:
    """Exit with status 2 and what to install unless the server's packages are installed."""
    try:
        require_server(f"`battleline {command}`")
    except ServerNotInstalled as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(2) from None
