"""The `battleline` command: one typer app, each subcommand in its own module."""

import typer

from .commands.analyze import analyze

app = typer.Typer(help="Battle Line Online: serve, play, analyse.", no_args_is_help=True)
app.command()(analyze)
