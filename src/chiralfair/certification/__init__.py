"""Certified answers for ReLU networks and tree ensembles: how much of the domain is provably fair, who is unaffected.

Testing finds IDIs; it never shows their absence. Certification does, for the models whose layers it can read (the
paper's DNN, a ``torch.nn.Sequential`` of Linear/ReLU layers, a TorchScript or ONNX file of one): it bounds the
network at every protected combination over boxes of integer codes (:mod:`.ibp`, :mod:`.symbolic`, :mod:`.crown`),
decides each box (:mod:`.decision`: certified fair, falsified, undecided), splits what is left
(:mod:`.branch_and_bound`) and checks concrete points on the model at the leaves, so every IDI it reports is real.

Tree ensembles (scikit-learn, LightGBM, XGBoost over the codes) are read leaf by leaf (:mod:`.tree_reading`,
:mod:`.tree_ensemble`) and decided exactly by :mod:`.tree_search`: bounds from the leaves a box reaches, splits at the
trees' own thresholds, and the model's own check on every cell. :mod:`.neighbourhood` builds ``similar=`` boxes.

:func:`certify_domain` answers for the whole domain (shares by volume and by data rows), :func:`certify_individuals`
for each person; ``chiralfair.certify`` and ``chiralfair certify`` call both on your model and data.

Names are imported on first use (PEP 562): torch is loaded only when a certificate is computed.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_attributes

_MODULE_OF = {"BranchAndBound": "branch_and_bound", "CertifyResult": "result", "IndividualCertificates": "result",
              "KeySpace": "key_space", "LinearBounds": "crown", "ReluNetwork": "network",
              "certify_domain": "certificates", "certify_individuals": "certificates", "crown_bounds": "crown",
              "interval_bounds": "ibp", "relu_network": "reading", "symbolic_bounds": "symbolic",
              "TreeBranchAndBound": "tree_search", "TreeEnsemble": "tree_ensemble",
              "read_tree_ensemble": "tree_reading"}

__all__ = sorted(_MODULE_OF)

if TYPE_CHECKING:
    from .branch_and_bound import BranchAndBound  # noqa: F401
    from .certificates import certify_domain, certify_individuals  # noqa: F401
    from .crown import LinearBounds, crown_bounds  # noqa: F401
    from .ibp import interval_bounds  # noqa: F401
    from .key_space import KeySpace  # noqa: F401
    from .network import ReluNetwork  # noqa: F401
    from .reading import relu_network  # noqa: F401
    from .result import CertifyResult, IndividualCertificates  # noqa: F401
    from .symbolic import symbolic_bounds  # noqa: F401
    from .tree_ensemble import TreeEnsemble  # noqa: F401
    from .tree_reading import read_tree_ensemble  # noqa: F401
    from .tree_search import TreeBranchAndBound  # noqa: F401

if not TYPE_CHECKING:  # type checkers read the imports above, so a name not there is an error, not `object`
    __getattr__, __dir__ = lazy_attributes(__name__, _MODULE_OF, globals())
