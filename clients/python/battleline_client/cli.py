"""The `battleline` command: one typer app, each subcommand in its own module; the
server distribution, when installed, adds its own (serve, ai, tournament, web)."""

import typer

from .commands.analyze import analyze
from .commands.loadtest import loadtest
from .commands.play import play
from .commands.review import review
from .commands.server import add_server_commands
from .commands.watch import watch

# Plain click help (rich_markup_mode=None): typer's rich panels cut long option and
# environment variable names short ("BATTLELINE_DATA_…") in an 80-column terminal.
app = typer.Typer(help="Battle Line Online: serve, play, analyze.", no_args_is_help=True,
                  rich_markup_mode=None)
app.command()(analyze)
app.command()(loadtest)
app.command()(play)
app.command()(review)
app.command()(watch)
add_server_commands(app)


@app.callback()
def main() -> None:
    """Battle Line Online: serve, play, analyze.

    A callback keeps `battleline analyze` a subcommand: with only one command
    registered, typer would otherwise run it as the whole app.
    """


if __name__ == "__main__":  # `python -m battleline_client.cli` (how `battleline serve` starts `ai`)
    app()
