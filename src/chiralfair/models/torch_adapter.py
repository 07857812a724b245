"""Torch modules as models under test: batched inference without autograd, gradients by autograd.

Inputs are cast to the module's own floating dtype (float32 for most, float64 for a ``.double()`` module).
With ``output="probability"`` every output is checked to lie in [0, 1] (and two-column rows to sum to 1), so a
logit network wrapped without ``output="logit"`` is refused as soon as one output leaves [0, 1]; one whose
outputs all happen to lie in [0, 1] cannot be detected.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..exceptions import ConfigError, ModelInputError, ModelOutputError
from ._torch import require_torch
from .language import ModelLanguage, check_probabilities, finite_probabilities, resolve_classes
from .protocol import CountingModel, from_positive_probability, is_frame
from .threads import single_intra_op_thread

# Without torch, importing this module raises MissingDependencyError (an ImportError) saying how to install it.
if TYPE_CHECKING:  # the real module, so that type checkers see torch's types
    import torch
else:
    torch = require_torch("chiralfair.models.torch_adapter (torch modules as models under test)")

from .dnn import PaperDNN  # noqa: E402 - after torch's check, whose message names this module


def input_dtype(module: torch.nn.Module) -> torch.dtype:
    """The floating dtype of the module's first floating parameter or buffer (float32 if it has none).

    Parameters
    ----------
    module : torch.nn.Module

    Returns
    -------
    torch.dtype
    """
    for tensor in (*module.parameters(), *module.buffers()):
        if tensor.is_floating_point():
            return tensor.dtype
    return torch.float32


def positive_probability(module: torch.nn.Module, x: torch.Tensor, output: str, positive_index: int = 1, *,
                         name: str = "module") -> torch.Tensor:
    """P(positive class), shape (n,), from a module with (n,), (n, 1) or (n, 2) outputs.

    One column is the probability (or logit) of class 1 of the module's classes; two columns are one per
    class. ``positive_index`` 0 takes the other class.

    Parameters
    ----------
    module : torch.nn.Module
    x : torch.Tensor, shape (n, n_features)
    output : {"probability", "logit"}
        What the module's output is.
    positive_index : int, default=1
        The output column of the positive class, for two columns.
    name : str, default="module"
        For the message.

    Returns
    -------
    torch.Tensor, shape (n,)

    Raises
    ------
    ModelOutputError
        If the output has another shape, or ``output="probability"`` and an output is outside [0, 1] (the
        message names ``output="logit"``).
    """
    out = _output(module, x, name)
    if output == "probability":
        _check_probabilities(out, name)
        p1 = out[:, 1] if out.shape[1] == 2 else out[:, 0]
    else:
        p1 = torch.softmax(out, dim=1)[:, 1] if out.shape[1] == 2 else torch.sigmoid(out[:, 0])
    return p1 if positive_index == 1 else 1 - p1


def _output(module: torch.nn.Module, x: torch.Tensor, name: str) -> torch.Tensor:
    """The module's output at ``x`` as (n, 1) or (n, 2), refused (naming the shape) when it is neither."""
    # the zoo DNN by the same operations without its layers' module calls (PaperDNN.forward_unhooked)
    out = module.forward_unhooked(x) if type(module) is PaperDNN else None
    if out is None:
        out = module(x)
    if out.ndim == 1:
        out = out[:, None]
    if out.ndim != 2 or out.shape[0] != x.shape[0] or out.shape[1] not in (1, 2):
        raise ModelOutputError(f"torch module {name!r} returned shape {tuple(out.shape)} for {x.shape[0]} rows; "
                               "expected (n,), (n, 1) or (n, 2)")
    return out


def positive_probability_values(module: torch.nn.Module, x: torch.Tensor, output: str, positive_index: int = 1, *,
                                name: str = "module") -> np.ndarray:
    """:func:`positive_probability` as float64 numpy values, checked as finite: the inference path of a model call.

    The same values: a module's probabilities (float32 or float64) are read as a numpy view of the output, their
    bounds checked by numpy's min and max of that view (instead of five small torch operations at every model
    call), the other class's taken as ``1 - p`` in the output's own dtype as torch does, and widened to float64.
    Logits, and outputs of other dtypes, go through :func:`positive_probability`.

    Parameters
    ----------
    module : torch.nn.Module
    x : torch.Tensor, shape (n, n_features)
    output : {"probability", "logit"}
    positive_index : int, default=1
    name : str, default="module"

    Returns
    -------
    numpy.ndarray of float64, shape (n,)

    Raises
    ------
    ModelOutputError
        As :func:`positive_probability`, and when a probability is NaN or infinite.
    """
    if output != "probability":
        return finite_probabilities(positive_probability(module, x, output, positive_index, name=name).double()
                                    .cpu().numpy(), name)
    out = _output(module, x, name)
    if out.dtype not in (torch.float32, torch.float64):
        p = positive_probability(module, x, output, positive_index, name=name)
        return finite_probabilities(p.double().cpu().numpy(), name)
    values = out.detach().cpu().numpy()
    if values.shape[1] == 1 and values.size and values.min() >= 0 and values.max() <= 1:  # NaN fails both
        # within [0, 1], so finite: the one column, widened
        return (values[:, 0] if positive_index == 1 else 1 - values[:, 0]).astype(np.float64)
    check_probabilities(values.astype(np.float64), name)  # raises its own message, or passes (two columns)
    p1 = values[:, 1] if values.shape[1] == 2 else values[:, 0]
    return finite_probabilities((p1 if positive_index == 1 else 1 - p1).astype(np.float64), name)


def _check_probabilities(out: torch.Tensor, name: str) -> None:
    """:func:`~.language.check_probabilities` of a module's output, read in torch when one column lies in [0, 1].

    The bounds come from one ``aminmax`` on the tensor (NaN fails both comparisons, an infinity lies outside), so a
    valid one-column output is not copied to numpy at every model call; anything else goes through the numpy check,
    which raises its own message.
    """
    out = out.detach()
    if out.numel() and out.shape[1] == 1:
        lo, hi = torch.aminmax(out)
        if bool(lo >= 0) and bool(hi <= 1):
            return
    check_probabilities(out.double().cpu().numpy(), name)


def torch_model(module: torch.nn.Module, *, name: str | None, batch_size: int, output: str = "probability",
                device: str | torch.device = "cpu", positive_class=None, classes=None, to_frame=None) -> CountingModel:
    """Wrap a torch module (see :func:`chiralfair.models.adapters.as_model`).

    Parameters
    ----------
    module : torch.nn.Module
    name : str or None
    batch_size : int
    output : {"auto", "probability", "logit"}
        ``"auto"`` is ``"probability"`` (a final sigmoid or softmax).
    device : str or torch.device
    positive_class : optional
        One of ``classes``; defaults to 1 for the default classes (0, 1).
    classes : sequence of two labels, optional
        The classes of the module's output columns (one column: the probability of ``classes[1]``).
    to_frame : callable, optional
        Codes -> DataFrame of the data's columns: the module is then fed that frame's values (as float64
        numbers in its column order, then its own dtype), and rows given as a DataFrame (the population) their
        own values (``model_input="values"``). Such a model has no gradient in codes.

    Returns
    -------
    CountingModel

    Raises
    ------
    ConfigError
        If ``output`` is ``"label"`` or unknown, or the classes / positive class are invalid.
    """
    output = "probability" if output == "auto" else output
    if output not in ("probability", "logit"):
        raise ConfigError(f"output must be 'probability' or 'logit' for a torch module, got {output!r}")
    name = name or type(module).__name__
    classes, positive_class = resolve_classes((0, 1) if classes is None else classes, positive_class,
                                              model_name=name,
                                              where="the default classes" if classes is None else "classes=")
    language = ModelLanguage(classes=classes, positive_class=positive_class, output=output, to_frame=to_frame,
                             as_values=to_frame is not None)
    index = language.positive_index
    module = module.to(device).eval()
    dtype = input_dtype(module)

    def numbers(X) -> np.ndarray:
        if is_frame(X):  # the population: the rows' own values
            return language.frame_input(X)
        if language.takes_frame:  # codes of the search: their decoded values (a bin's representative)
            return language.model_input(np.rint(X).astype(np.int64))
        return X

    def proba1(X: np.ndarray) -> np.ndarray:
        values = numbers(X)
        try:
            with torch.inference_mode(), single_intra_op_thread():
                x = torch.as_tensor(values, dtype=dtype, device=device)
                p = positive_probability_values(module, x, output, index, name=name)
        except ModelOutputError as err:  # NaN out: when NaN went in, name the columns that held it
            if language.takes_frame:
                _refuse_missing_values(values, X, language, name, err)
            raise
        return p

    def gradient(X):
        x = torch.as_tensor(X, dtype=dtype, device=device).requires_grad_(True)
        with single_intra_op_thread():
            p = positive_probability(module, x, output, index, name=name)
            (g,) = torch.autograd.grad(p.sum(), x)
        return g.double().cpu().numpy()

    # A module fed values has no gradient in codes: a bin's code moves its value by a jump, not a slope.
    return from_positive_probability(proba1, name=name, batch_size=batch_size, estimator=module, language=language,
                                     gradient=None if language.takes_frame else gradient)


def _refuse_missing_values(values: np.ndarray, X, language: ModelLanguage, name: str, err: Exception) -> None:
    """Refuse, naming the columns, values with missing cells (NaN) that got no finite probability (``err``).

    A module fed values computes with NaN as with any number: its output is NaN, an input problem (the sklearn
    path names the column and value too), not the model's.
    """
    missing = np.isnan(np.asarray(values, dtype=np.float64))
    if not missing.any():
        return
    if is_frame(X):
        columns = [str(c) for c in X.columns]
    elif language.to_frame is not None:
        columns = [str(c) for c in language.to_frame(np.rint(np.asarray(X)[:1]).astype(np.int64)).columns]
    else:
        columns = [f"column {j}" for j in range(missing.shape[1])]
    named = [columns[j] for j in np.flatnonzero(missing.any(axis=0))]
    n_rows = int(missing.any(axis=1).sum())
    shown = ", ".join(f"{c}='missing'" for c in named)
    raise ModelInputError(
        f"model {name!r} returned probabilities that are NaN or infinite, and {n_rows:,} of the {len(missing):,} "
        f"rows sent hold missing values (NaN) in {shown}: a torch module fed values computes with NaN as a number. "
        f"Fill those values (e.g. df[{named[0]!r}].fillna(...)) or leave those rows out of the data, or give the "
        f"module inputs without missing values ({err})", model_name=name) from err
