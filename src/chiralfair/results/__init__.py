"""What a search leaves: frozen result records with a JSON round trip, the run folder, and provenance.

:class:`SearchResult` and :class:`SeedReport` (:mod:`.search`, architecture: results and files); the run folder's files
and its streamed IDI pairs (:mod:`.run_folder`); the library versions every ``result.json`` records
(:mod:`.provenance`).

Names are imported on first use (PEP 562), so that a command that only checks a run folder does not load pandas.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_attributes

_MODULE_OF = {"PAIR_ARRAYS": "search", "SearchResult": "search", "SeedReport": "search", "base_meta": "search",
              "disfavoured_groups": "search", "protected_pair_counts": "search"}

__all__ = sorted(_MODULE_OF)

if TYPE_CHECKING:
    from .search import (  # noqa: F401
        PAIR_ARRAYS,
        SearchResult,
        SeedReport,
        base_meta,
        disfavoured_groups,
        protected_pair_counts,
    )

if not TYPE_CHECKING:  # type checkers read the imports above, so a name not there is an error, not `object`
    __getattr__, __dir__ = lazy_attributes(__name__, _MODULE_OF, globals())
