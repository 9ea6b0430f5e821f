"""The `battleline` command: one typer app, each subcommand in its own module."""

import typer

from .commands.ai import ai
from .commands.analyze import analyze
from .commands.loadtest import loadtest
from .commands.play import play
from .commands.review import review
from .commands.serve import serve
from .commands.tournament import tournament
from .commands.watch import watch
from .commands.web import web

app = typer.Typer(help="Battle Line Online: serve, play, analyze.", no_args_is_help=True)
app.command()(ai)
app.command()(analyze)
app.command()(loadtest)
app.command()(play)
app.command()(review)
app.command()(serve)
app.command()(tournament)
app.command()(watch)
app.command()(web)


@app.callback()
def main() -> None:
    """Battle Line Online: serve, play, analyze.

    A callback keeps `battleline analyze` a subcommand: with only one command
    registered, typer would otherwise run it as the whole app.
    """


if __name__ == "__main__":  # `python -m battleline_client.cli` (how `battleline serve` starts `ai`)
    app()
