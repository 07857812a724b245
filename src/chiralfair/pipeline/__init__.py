"""The run pipeline: data → model → seeds → search → verdict → (retrain) → write, wired once.

Two resolvers make the inputs of a run: :func:`inputs_from_names` (a benchmark dataset and a zoo model) and
:func:`inputs_from_objects` (your DataFrame or data file and your fitted model or model file); every front door
calls the steps that follow: ``chiralfair run`` and grid cells (:func:`run_experiment`), :func:`audit`,
:func:`estimate` and :func:`retrain` (also ``chiralfair.audit``, ``chiralfair.estimate``, ``chiralfair.retrain``),
and every command of the CLI. Each check (names, budget, gradient needed, protected attributes, positive class)
lives in one place (:mod:`.checks`, :mod:`.inputs`, :func:`.steps.prepare_search`). See architecture: layers and habits.

Names are imported on first use (PEP 562), so that the command line can refuse a bad flag at once.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_attributes

_MODULE_OF = {
    "MAX_BUDGET": "checks", "protected_list": "checks", "check_budget": "checks",
    "RunConfig": "config", "validate_config": "config",
    "RunInputs": "inputs", "inputs_from_names": "inputs", "inputs_from_objects": "inputs",
    "DataSpec": "spec", "resolve_spec": "spec",
    "SearchPlan": "steps", "prepare_search": "steps", "select_seeds": "steps", "run_search": "steps",
    "estimate_verdict": "steps",
    "RunOutcome": "outcome",
    "run_experiment": "run", "run_pipeline": "run",
    "retrain_inputs": "retraining", "inputs_from_run": "retraining", "retrain_benchmark": "retraining",
    "retrain_from_run": "retraining", "search_training_rows": "retraining", "select_repeatedly": "selections",
    "audit": "front", "estimate": "front", "estimate_benchmark": "front", "retrain": "front",
    "AuditResult": "front", "resolve_inputs": "front",
    "resolve_seed": "front",
    "check_fairness": "gate", "check_fairness_benchmark": "gate",
    "held_out_frame": "held_out", "measure_group_metrics": "held_out",
    "check_model_card_path": "exports", "write_model_card": "exports", "track": "exports",
    "check_bom_path": "exports", "write_bom": "exports", "check_tracking": "exports",
    "certify": "certification", "certify_benchmark": "certification", "certify_inputs": "certification",
}

__all__ = sorted(_MODULE_OF)

if TYPE_CHECKING:
    from .certification import certify, certify_benchmark, certify_inputs  # noqa: F401
    from .checks import MAX_BUDGET, check_budget, protected_list  # noqa: F401
    from .config import RunConfig, validate_config  # noqa: F401
    from .exports import (  # noqa: F401
        check_bom_path,
        check_model_card_path,
        check_tracking,
        track,
        write_bom,
        write_model_card,
    )
    from .front import AuditResult, audit, estimate, estimate_benchmark, resolve_inputs, resolve_seed, retrain  # noqa: F401  # noqa: F401
    from .gate import check_fairness, check_fairness_benchmark  # noqa: F401
    from .held_out import held_out_frame, measure_group_metrics  # noqa: F401
    from .inputs import RunInputs, inputs_from_names, inputs_from_objects  # noqa: F401
    from .outcome import RunOutcome  # noqa: F401
    from .retraining import (  # noqa: F401
        inputs_from_run,
        retrain_benchmark,
        retrain_from_run,
        retrain_inputs,
        search_training_rows,  # noqa: F401
    )
    from .run import run_experiment, run_pipeline  # noqa: F401
    from .selections import select_repeatedly  # noqa: F401
    from .spec import DataSpec, resolve_spec  # noqa: F401
    from .steps import SearchPlan, estimate_verdict, prepare_search, run_search, select_seeds  # noqa: F401

if not TYPE_CHECKING:  # type checkers read the imports above, so a name not there is an error, not `object`
    __getattr__, __dir__ = lazy_attributes(__name__, _MODULE_OF, globals())
