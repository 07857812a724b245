"""Import every built-in mitigation method so that each registers itself (see :func:`.base.make_method`)."""

from . import auto, consistency, counterfactual, paper, reductions, unaware  # noqa: F401
