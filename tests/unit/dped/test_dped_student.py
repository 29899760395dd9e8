import numpy as np
import torch

from privtext.dped.aggregation import Aggregate
from privtext.dped.settings import DpedSettings
from privtext.dped.student import train_student

torch.set_num_threads(1)


def test_student_recovers_aggregated_vectors():
    rng = np.random.default_rng(0)
    target = rng.normal(size=(40, 8))
    answered = np.ones(40, bool)
    answered[-5:] = False
    target[~answered] = np.nan
    labels = np.where(answered[:, None], (np.arange(40)[:, None] + [1, 2]) % 40, -1)
    agg = Aggregate(answered=answered, hidden=target, labels=labels)
    s = DpedSettings(dim=8, top_k=2, student_epochs=300, student_lr=0.05, student_batch_size=16, variant="combined")
    out = train_student(agg, s, seed=0)
    assert np.isnan(out[~answered]).all()
    a = out[answered]
    cos = (a * target[answered]).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(target[answered], axis=1)
    # combined: the output term (Eq. 4) pulls against the hidden term (Eq. 3); the fit stays close
    assert cos.mean() > 0.9
    # hidden-only must fit the targets almost exactly
    h = train_student(agg, s.model_copy(update={"variant": "hidden_only"}), seed=0)
    assert np.abs(h[answered] - target[answered]).max() < 0.05
