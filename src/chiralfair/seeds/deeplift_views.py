"""Torch modules that let shap.DeepExplainer explain P(positive class) of any binary torch network, all rows at once.

DeepLIFT's rescale rule is applied only to the modules shap hooks (``nn.ReLU``, ``nn.Sigmoid``, ...); a functional
``torch.sigmoid`` or a softmax (which shap treats as elementwise) gets a gradient instead, and the attributions no
longer add up. :func:`deeplift_view` rewrites the output of a network so that the last nonlinearity is always an
``nn.Sigmoid`` of a logit, whatever the network outputs (one or two columns; probabilities or logits), and
:class:`RowsAsOneInput` turns n explained rows into one input (see :func:`chiralfair.seeds.explainers._deep`).
Imported only when a torch module is explained.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from ..models._torch import require_torch

if TYPE_CHECKING:  # the real module, so that type checkers see torch's types
    import torch

    from ..models.dnn import PaperDNN
else:
    torch = require_torch("explainer='deep'")


class RowsAsOneInput(torch.nn.Module):
    """``g(Z) = sum_i f(Z[:, i])``: takes (batch, n, d), returns (batch, 1), for ``f`` with outputs (m,) or (m, 1)."""

    def __init__(self, net: torch.nn.Module):
        super().__init__()
        self.net = net

    def forward(self, z):
        """(batch, n, d) -> (batch, 1): the sum of the net's output over the n rows.

        Parameters
        ----------
        z : torch.Tensor, shape (batch, n, d)

        Returns
        -------
        torch.Tensor, shape (batch, 1)
        """
        batch, n, d = z.shape
        return self.net(z.reshape(batch * n, d)).reshape(batch, n).sum(dim=1, keepdim=True)


class SigmoidOfLogit(torch.nn.Module):
    """``nn.Sigmoid`` of a logit: the net's one output column, or ``z_1 - z_0`` of its two.

    ``softmax(z)_1 = sigmoid(z_1 - z_0)`` exactly, and the difference is an ``nn.Linear`` layer, which DeepLIFT
    treats exactly. With ``logit_method``, the logit is ``net.logit(x)`` (the paper's DNN).
    """

    def __init__(self, net: torch.nn.Module, *, n_columns: int, dtype: torch.dtype, logit_method: bool = False):
        super().__init__()
        self.net, self.logit_method, self.sigmoid = net, logit_method, torch.nn.Sigmoid()
        self.difference = None
        if n_columns == 2:
            self.difference = torch.nn.Linear(2, 1, bias=False).to(dtype)
            with torch.no_grad():
                self.difference.weight.copy_(torch.tensor([[-1.0, 1.0]], dtype=dtype))

    def forward(self, x):
        """(n, d) -> (n, 1): P(``classes[1]``).

        Parameters
        ----------
        x : torch.Tensor, shape (n, d)

        Returns
        -------
        torch.Tensor, shape (n, 1)
        """
        # with logit_method the net is the paper's DNN, which has logit()
        z = (cast("PaperDNN", self.net).logit(x) if self.logit_method else self.net(x)).reshape(len(x), -1)
        return self.sigmoid(z if self.difference is None else self.difference(z))


class ColumnOne(torch.nn.Module):
    """The second output column of a network (P(``classes[1]``) of a two-column probability output)."""

    def __init__(self, net: torch.nn.Module):
        super().__init__()
        self.net = net

    def forward(self, x):
        """(n, d) -> (n, 1): the net's column 1.

        Parameters
        ----------
        x : torch.Tensor, shape (n, d)

        Returns
        -------
        torch.Tensor, shape (n, 1)
        """
        return self.net(x)[:, 1:2]


def deeplift_view(module: torch.nn.Module, output: str, n_columns: int, dtype: torch.dtype) -> torch.nn.Module:
    """A module computing P(``classes[1]``), shape (n, 1) or (n,), whose last nonlinearity DeepExplainer hooks.

    Parameters
    ----------
    module : torch.nn.Module
        The network (a copy: the view shares its parameters, and shap changes the modules it explains).
    output : {"probability", "logit"}
        What the network outputs, as declared to :func:`~chiralfair.models.as_model`.
    n_columns : {1, 2}
        Its output columns.
    dtype : torch.dtype
        Its parameters' floating dtype.

    Returns
    -------
    torch.nn.Module
        - the paper's DNN: ``nn.Sigmoid`` of :meth:`~chiralfair.models.dnn.PaperDNN.logit` (its ``forward`` calls
          ``torch.sigmoid``, which DeepExplainer does not hook: the attributions then summed to a fraction of
          ``f(x) - E f(b)``, a median error of 0.30 for a median difference of 0.38 on the census DNN);
        - logits: ``nn.Sigmoid`` of the logit, or of ``z_1 - z_0`` for two columns;
        - probabilities from an ``nn.Sequential`` ending in ``nn.Softmax``: the same on the logits before it;
        - other probabilities: the module (one column) or its column 1 (two columns); an unhooked final
          ``torch.sigmoid`` / ``torch.softmax`` is then caught by the summation check.
    """
    from ..models.dnn import PaperDNN

    if isinstance(module, PaperDNN):
        return SigmoidOfLogit(module, n_columns=1, dtype=dtype, logit_method=True).eval()
    if output == "logit":
        return SigmoidOfLogit(module, n_columns=n_columns, dtype=dtype).eval()
    if n_columns == 2 and isinstance(module, torch.nn.Sequential) and isinstance(module[-1], torch.nn.Softmax) \
            and module[-1].dim in (1, -1):
        return SigmoidOfLogit(module[:-1], n_columns=2, dtype=dtype).eval()
    if n_columns == 2:
        return ColumnOne(module).eval()
    return module
