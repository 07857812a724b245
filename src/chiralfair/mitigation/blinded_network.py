"""A torch network fed blinded codes (the saved form of ``unaware`` on a torch model), scriptable as TorchScript.

The blinding is :func:`~chiralfair.mitigation.blinding.codes_blinding`'s, held in buffers, so the module saved with
``torch.jit.script`` loads back with ``torch.jit.load`` (``--model FILE.pt``) and predicts on its own. Imports torch.
"""

# No `from __future__ import annotations`: TorchScript reads the class annotations (column: int) as types.
from typing import TYPE_CHECKING, Any

import torch


class _CoupledColumn(torch.nn.Module):
    """One coupled column's move: its blinded code from the attribute's value and its own code."""

    column: int
    lo: int
    if TYPE_CHECKING:  # the buffers, as tensors (TorchScript reads the annotations above only)
        attribute_columns: torch.Tensor
        attribute_values: torch.Tensor
        table: torch.Tensor

    def __init__(self, coupling: dict[str, Any]):
        super().__init__()
        self.column = int(coupling["column"])
        self.lo = int(coupling["lo"])
        self.register_buffer("attribute_columns", torch.as_tensor(coupling["attribute_columns"], dtype=torch.long))
        self.register_buffer("attribute_values", torch.as_tensor(coupling["attribute_values"], dtype=torch.float32))
        self.register_buffer("table", torch.as_tensor(coupling["table"], dtype=torch.float32))

    def forward(self, x: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
        """``out`` with this column moved as ``x``'s protected value and own code say (``out`` is changed)."""
        block = x.index_select(1, self.attribute_columns)
        match = (block[:, None, :] == self.attribute_values[None, :, :]).all(dim=2)
        position = torch.where(match.any(dim=1), match.long().argmax(dim=1), torch.zeros_like(match[:, 0]).long())
        code = (x[:, self.column] - self.lo).round().long().clamp(0, int(self.table.shape[1]) - 1)
        out[:, self.column] = self.table[position, code].to(out.dtype)
        return out


class BlindedNetwork(torch.nn.Module):
    """``network`` applied to blinded codes; ``forward`` and ``logit`` as the network's own.

    Parameters
    ----------
    network : torch.nn.Module
        Trained on blinded codes; ``forward(x) -> (n, 1)`` P(y = 1) and, for the paper's DNN, ``logit(x)``.
    blinding : dict
        :func:`~chiralfair.mitigation.blinding.codes_blinding`.
    """

    if TYPE_CHECKING:
        protected_columns: torch.Tensor
        protected_values: torch.Tensor

    def __init__(self, network: torch.nn.Module, blinding: dict[str, Any]):
        super().__init__()
        self.network = network
        self.coupled = torch.nn.ModuleList([_CoupledColumn(c) for c in blinding["couplings"]])
        self.register_buffer("protected_columns", torch.as_tensor(blinding["columns"], dtype=torch.long))
        self.register_buffer("protected_values", torch.as_tensor(blinding["values"], dtype=torch.float32))
        self.n_features = int(getattr(network, "n_features", 0))

    def blind(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` with the protected side blinded.

        Parameters
        ----------
        x : torch.Tensor of float32, shape (n_samples, n_features)
            Codes.

        Returns
        -------
        torch.Tensor of float32, shape (n_samples, n_features)
        """
        out = x.clone()
        for move in self.coupled:
            out = move(x, out)
        out[:, self.protected_columns] = self.protected_values.to(out.dtype)
        return out

    def logit(self, x: torch.Tensor) -> torch.Tensor:
        """The network's pre-sigmoid output of the blinded ``x``.

        Parameters
        ----------
        x : torch.Tensor of float32, shape (n_samples, n_features)
            Codes.

        Returns
        -------
        torch.Tensor, shape (n_samples, 1)
        """
        return self.network.logit(self.blind(x))  # type: ignore[operator]  # reason: the paper's DNN has logit

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The network's output of the blinded ``x``: P(y = 1).

        Parameters
        ----------
        x : torch.Tensor of float32, shape (n_samples, n_features)
            Codes.

        Returns
        -------
        torch.Tensor, shape (n_samples, 1)
        """
        return self.network(self.blind(x))
