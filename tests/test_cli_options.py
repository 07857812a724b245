"""Option groups: a command names a group once; typer sees its flags; the command receives the group built."""

import dataclasses

import click
import pytest
import typer
import typer.main
from typer.testing import CliRunner

from chiralfair.cli import app
from chiralfair.cli.options import Counterparts, Inputs, Search, VerboseOpt, with_option_groups

runner = CliRunner()


def test_a_command_receives_its_groups_built_from_their_flags():
    toy = typer.Typer()

    @toy.command()
    @with_option_groups
    def search_only(*, search: Search, verbose: VerboseOpt = False) -> None:
        typer.echo(f"{search!r} {verbose}")

    result = runner.invoke(toy, ["--generator", "sg", "--max-local", "3", "-v"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == "Search(seeds='iandd', generator='sg', max_global=100, max_local=3) True"
    assert "--max-global" in runner.invoke(toy, ["--help"], terminal_width=200).output


def test_a_group_flag_named_like_another_parameter_is_refused_when_the_command_is_declared():
    with pytest.raises(TypeError, match="has the name of another parameter"):
        @with_option_groups
        def clash(*, search: Search, seeds: str = "random") -> None:
            pass


@pytest.mark.parametrize(("command", "groups"), [
    ("run", (Inputs, Search, Counterparts)), ("estimate", (Inputs, Counterparts)),
    ("check", (Inputs, Counterparts)), ("retrain", (Inputs, Search, Counterparts)),
])
def test_every_flag_of_a_group_is_an_option_of_the_commands_that_take_it(command, groups):
    group = typer.main.get_command(app)
    options = {p.name for p in group.get_command(click.Context(group), command).params}
    for g in groups:
        assert {f.name for f in dataclasses.fields(g)} <= options, (command, g.__name__)
    assert "seeds" not in options if Search not in groups else "seeds" in options
