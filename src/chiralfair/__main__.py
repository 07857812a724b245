"""``python -m chiralfair``: the command line."""

from .cli import app

app(prog_name="chiralfair")
