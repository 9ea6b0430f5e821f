"""The server's commands in the `battleline` app: registered by the installed server
distribution (the ``battleline.commands`` entry points), else stand-ins that say what
to install instead of failing on an import."""

from __future__ import annotations

from collections.abc import Callable

import typer

from ..hosting import ServerNotInstalled, require_server, server_plugins

# What battleline-online adds; each stand-in takes any options so that
# `battleline serve --port 1` still gets the message, not a usage error.
SERVER_COMMANDS = ("serve", "ai", "tournament", "web")
_ANY_ARGUMENTS = {"allow_extra_args": True, "ignore_unknown_options": True}


def needs_server(command: str) -> None:
    """Exit with status 2 and what to install unless the server is installed."""
    try:
        require_server(f"`battleline {command}`")
    except ServerNotInstalled as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(2) from None


def add_server_commands(app: typer.Typer) -> None:
    """Let each installed server distribution register its commands on ``app``; with
    none installed, add the stand-ins."""
    plugins = server_plugins()
    for plugin in plugins:
        register: Callable[[typer.Typer], None] = plugin.load()
        register(app)
    if not plugins:
        for name in SERVER_COMMANDS:
            app.command(name, context_settings=_ANY_ARGUMENTS,
                        help="Needs the server (battleline-online).")(_stand_in(name))


def _stand_in(name: str) -> Callable[[], None]:
    def command() -> None:
        needs_server(name)

    return command
