"""A tiny installed distribution for the tests: a dist-info folder on sys.path with chiralfair entry points.

``importlib.metadata`` finds a distribution by its ``*.dist-info`` folder on ``sys.path``, as pip leaves it; so
writing one (METADATA, entry_points.txt) beside a module and putting the folder on the path installs it for the
process, without pip. :func:`install` does that; the names it declares are removed from the registries again by
:func:`uninstall`.
"""

import sys
import textwrap
from pathlib import Path

MODULE = "chiralfair_test_plugin"
GENERATOR, SEEDS, BROKEN = "ep-nudge", "ep-spread", "ep-broken"

SOURCE = '''
import numpy as np

from chiralfair.generators import Generator
from chiralfair.seeds import SeedStrategy


class Nudge(Generator):
    """Global phase: the seeds; local phase: random one-unit steps on one non-protected column."""

    name = "ep-nudge"

    def _search(self, recorder, seeds, rng):
        result, new = recorder.check(seeds, "global")
        recorder.n_seed_idis = int(result.is_idi.sum())
        domain = recorder.domain
        walkers = result.X[new]
        for _ in range(self.max_local):
            if len(walkers) == 0:
                break
            step = walkers.copy()
            columns = rng.choice(domain.non_protected, size=len(step))
            step[np.arange(len(step)), columns] += rng.choice([-1, 1], size=len(step))
            walkers = recorder.check(domain.clip(step), "local")[0].X
        return ()


class SpreadRows(SeedStrategy):
    """Data rows drawn without replacement."""

    name = "ep-spread"

    def _choose(self, model, dataset, n_seeds, rng):
        rows = rng.choice(dataset.n_samples, size=min(n_seeds, dataset.n_samples), replace=False)
        return dataset.X[rows], {}
'''


def install(folder: Path) -> Path:
    """Write the module and its dist-info into ``folder`` (then put ``folder`` on sys.path)."""
    (folder / f"{MODULE}.py").write_text(SOURCE)
    info = folder / f"{MODULE}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {MODULE.replace('_', '-')}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(f"""\
        [chiralfair.generators]
        {GENERATOR} = {MODULE}:Nudge
        {BROKEN} = {MODULE}_missing:Nope

        [chiralfair.seed_strategies]
        {SEEDS} = {MODULE}:SpreadRows
        """))
    return folder


def uninstall() -> None:
    """Forget what loading the entry points registered and imported."""
    from chiralfair.generators.base import GENERATORS
    from chiralfair.seeds.base import SEED_STRATEGIES

    for registry in (GENERATORS, SEED_STRATEGIES):
        for name in (GENERATOR, SEEDS, BROKEN):
            registry._entries.pop(name, None)
    sys.modules.pop(MODULE, None)
