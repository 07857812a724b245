"""Torch modules as models under test: batched inference without autograd, gradients by autograd."""

from __future__ import annotations

import numpy as np
import torch

from .protocol import CountingModel
from .threads import single_intra_op_thread


def positive_probability(module: torch.nn.Module, x: torch.Tensor, output: str) -> torch.Tensor:
    """Positive-class probability, shape (n,), from a module with (n, 1) or (n, 2) outputs."""
    out = module(x)
    if out.ndim == 1:
        out = out[:, None]
    if out.shape[1] == 1:
        return (out[:, 0] if output == "probability" else torch.sigmoid(out[:, 0]))
    if output == "probability":
        return out[:, 1]
    return torch.softmax(out, dim=1)[:, 1]


def torch_model(module: torch.nn.Module, *, name: str | None, batch_size: int, output: str = "probability",
                device: str | torch.device = "cpu") -> CountingModel:
    """Wrap a torch module (see :func:`chiralfair.models.adapters.as_model`)."""
    if output not in ("probability", "logit"):
        raise ValueError(f"output must be 'probability' or 'logit', got {output!r}")
    module = module.to(device).eval()

    def proba1(X: np.ndarray) -> np.ndarray:
        with torch.inference_mode(), single_intra_op_thread():
            x = torch.as_tensor(X, dtype=torch.float32, device=device)
            return positive_probability(module, x, output).double().cpu().numpy()

    def predict(X):
        return (proba1(X) > 0.5).astype(np.int64)

    def predict_proba(X):
        p = proba1(X)
        return np.column_stack([1 - p, p])

    def predict_both(X):
        p = proba1(X)
        return np.column_stack([(p > 0.5).astype(np.float64), p])

    def gradient(X):
        x = torch.as_tensor(X, dtype=torch.float32, device=device).requires_grad_(True)
        with single_intra_op_thread():
            p = positive_probability(module, x, output)
            (g,) = torch.autograd.grad(p.sum(), x)
        return g.double().cpu().numpy()

    return CountingModel(predict, predict_proba=predict_proba, input_gradient=gradient,
                         name=name or type(module).__name__, batch_size=batch_size, estimator=module,
                         predict_both=predict_both)
