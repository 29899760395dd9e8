"""DPED student (Alg. 1 lines 30-33, Eq. 3-4), trained only on the noisy aggregate.

Student: hidden vectors h_S(x) (the released word embeddings) and output vectors u_w, with
y_S(x) = sigmoid(U h_S(x)) over the query vocabulary. Loss of Eq. 3 on the answered queries:
  ||h_S(x) - H~(x)||^2                       (hidden layer; variants combined, hidden_only)
  + ||y_S(x) - y^(x)||_2^2  (Eq. 4)          (output layer; variants combined, output_only)
where y^(x) is the k-hot vector of the released noisy top-k vote set. Everything the student sees
is a DP release, so the student is post-processing and costs no privacy. DP-SGD training of the
student or of a baseline (Opacus) is not available in this environment and not implemented.
"""
from __future__ import annotations

import numpy as np
import torch

from privtext.dped.aggregation import Aggregate
from privtext.dped.settings import DpedSettings
from privtext.torch_scope import torch_scope


def train_student(agg: Aggregate, settings: DpedSettings, seed: int) -> np.ndarray:
    """Student word vectors [M, d] (rows of abstained queries are NaN: they are not released)."""
    use_hidden = settings.variant != "output_only" and agg.hidden is not None
    use_output = settings.variant != "hidden_only" and agg.labels is not None
    m = agg.answered.size
    ans = np.flatnonzero(agg.answered)
    rng = np.random.default_rng(seed)
    d = settings.dim
    with torch_scope(seed=seed):  # the only draws from torch's RNG
        h_s = torch.nn.Parameter(torch.randn(m, d) * (0.5 / d))
        u_s = torch.nn.Parameter(torch.randn(m, d) * (0.5 / d))
    opt = torch.optim.Adam([h_s, u_s], lr=settings.student_lr)
    target_h = torch.from_numpy(np.nan_to_num(agg.hidden).astype(np.float32)) if use_hidden else None
    labels = torch.from_numpy(agg.labels) if use_output else None
    bs = settings.student_batch_size
    for _ in range(settings.student_epochs if ans.size else 0):
        order = rng.permutation(ans)
        for s in range(0, order.size, bs):
            idx = torch.from_numpy(order[s:s + bs])
            h = h_s[idx]
            loss = torch.zeros(())
            if use_hidden:
                loss = loss + ((h - target_h[idx]) ** 2).sum(1).mean()
            if use_output:
                lab = labels[idx]
                target = torch.zeros(idx.numel(), m + 1).scatter_(1, torch.where(lab >= 0, lab, m), 1.0)[:, :m]
                y = torch.sigmoid(h @ u_s.T)
                loss = loss + ((y - target) ** 2).sum(1).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    out = h_s.detach().numpy().astype(np.float64)
    out[~agg.answered] = np.nan
    return out
