"""What a server command says when it cannot listen: one line naming the address and
the option that changes it, not a traceback."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import typer


@contextlib.contextmanager
def one_line_when_cannot_listen(command: str, options: str) -> Iterator[None]:
    """Run a command's servers; if one cannot bind, print why and exit with status 1."""
    from battleline_engine.listening import CannotListen

    try:
        yield
    except CannotListen as err:
        typer.echo(f"battleline {command}: {err} (in use by another program?); {options} "
                   "choose other ports, 0 any free one", err=True)
        raise typer.Exit(1) from None
