import numpy as np
import torch

from privtext.dped.settings import DpedSettings
from privtext.dped.teacher import teacher_answers, train_teacher

torch.set_num_threads(1)


def test_teacher_learns_planted_synonyms():
    # toy corpus: "cat"/"kitten" share contexts (meow, purr), "car"/"truck" share (engine, wheel)
    rng = np.random.default_rng(0)
    words = ["cat", "kitten", "car", "truck", "meow", "purr", "engine", "wheel"] + [f"f{i}" for i in range(30)]
    docs = []
    for _ in range(400):
        a, ctx = (["cat", "kitten"], ["meow", "purr"]) if rng.random() < 0.5 else (["car", "truck"],
                                                                                   ["engine", "wheel"])
        toks = [rng.choice(a) if rng.random() < 0.4
                else (rng.choice(ctx) if rng.random() < 0.6 else f"f{rng.integers(30)}")
                for _ in range(12)]
        docs.append(np.array([words.index(t) for t in toks]))
    # 38 words: summed batch gradients need the small step
    s = DpedSettings(dim=16, window=3, epochs=5, subsample=1.0, min_count=1, batch_size=256, lr=0.025)
    t = train_teacher(docs, len(words), s, seed=1)
    h, votes = teacher_answers(t, np.arange(len(words)), k=2)
    cos = h @ h.T
    assert cos[0, 1] > cos[0, 2] + 0.3 and cos[2, 3] > cos[2, 1] + 0.3
    assert np.allclose(np.linalg.norm(h, axis=1), 1.0, atol=1e-5)  # C_h = 1
    assert set(votes[0]) <= {4, 5, 1} and {4, 5} & set(votes[0])  # cat votes for meow/purr
