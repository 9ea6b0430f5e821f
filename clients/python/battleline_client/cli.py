"""The `battleline` command: one typer app, each subcommand in its own module."""

import typer

from .commands.analyze import analyze
from .commands.serve import serve

app = typer.Typer(help="Battle Line Online: serve, play, analyse.", no_args_is_help=True)
app.command()(analyze)
app.command()(serve)


@app.callback()
def main() -> None:
    """Battle Line Online: serve, play, analyse.

    A callback keeps `battleline analyze` a subcommand: with only one command
    registered, typer would otherwise run it as the whole app.
    """
