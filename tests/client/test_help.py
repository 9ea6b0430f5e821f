"""Every command's --help in an 80-column terminal names each option and environment
variable in full: typer's rich panels had cut them ("BATTLELINE_DATA_…")."""

from __future__ import annotations

import re

import pytest
import typer
from typer.core import TyperGroup, TyperOption
from typer.testing import CliRunner

from battleline_client.cli import app


def _group() -> TyperGroup:
    group = typer.main.get_command(app)
    assert isinstance(group, TyperGroup)
    return group


COMMANDS = sorted(_group().commands)


@pytest.mark.parametrize("command", COMMANDS)
def test_help_at_80_columns_names_every_option_and_variable_in_full(command: str) -> None:
    result = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "80"},
                                terminal_width=80)
    assert result.exit_code == 0, result.output
    for param in _group().commands[command].params:
        if not isinstance(param, TyperOption) or param.hidden:
            continue
        for name in [*param.opts, *param.secondary_opts]:
            assert name in result.output.split(), (name, result.output)
        if param.envvar and param.show_envvar:
            envvars = [param.envvar] if isinstance(param.envvar, str) else param.envvar
            for envvar in envvars:  # "[env var: NAME;" or "NAME]", wrapped anywhere
                shown = re.search(rf"env\s+var:\s+{envvar}[;\]]", result.output)
                assert shown, (envvar, result.output)
    assert max(map(len, result.output.splitlines())) <= 80, result.output


def test_the_commands_help_lists_every_command() -> None:
    """The plain help shortens each command's summary, never a command's name."""
    result = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "80"}, terminal_width=80)
    assert result.exit_code == 0, result.output
    listed = {line.split()[0] for line in result.output.split("Commands:")[1].splitlines()
              if line.strip()}
    assert listed == set(COMMANDS), result.output
