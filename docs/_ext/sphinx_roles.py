"""A griffe extension for the API reference: Sphinx roles in our docstrings read as code.

The docstrings are numpydoc, written for readers of the source and of ``help()``: they cross-reference with
Sphinx roles (``:func:`estimate```, ``:class:`~chiralfair.datasets.Dataset```). mkdocstrings shows such a role as
its raw text; this extension turns each into inline code with the name a reader would type (``~`` keeps the
last component, as Sphinx does).
"""

from __future__ import annotations

import re

import griffe

ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|data|attr|obj|exc|const|ref|term):`(~?)([^`]+)`")


def plain(text: str) -> str:
    """``text`` with every Sphinx role replaced by inline code."""
    return ROLE.sub(lambda m: f"`{m.group(2).rsplit('.', 1)[-1] if m.group(1) else m.group(2)}`", text)


class SphinxRoles(griffe.Extension):
    """Rewrite the roles of every docstring griffe loads."""

    def on_object(self, *, obj, **kwargs) -> None:  # noqa: D102
        if obj.docstring is not None:
            obj.docstring.value = plain(obj.docstring.value)
