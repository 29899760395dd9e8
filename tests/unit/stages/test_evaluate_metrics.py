"""evaluate's pure metric step: the real side as aggregates, the synthetic side as rows."""
import numpy as np

from privtext.metrics.utility import length_histogram
from privtext.stages.evaluate import utility_metrics


def test_metrics_of_a_synthetic_set_equal_to_the_real_one():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 4))
    texts = ["one two", "one two three", "a b c d e"] * 10
    metrics, syn_hist = utility_metrics(len(x), x.sum(axis=0), x.T @ x, 30.0, 40.0, length_histogram(texts), x,
                                        texts, [30, 10])
    assert abs(metrics["fid"]) < 1e-6  # the same Gaussian fit from moments as from rows
    assert metrics["length_ks"] == 0.0 and np.array_equal(syn_hist, length_histogram(texts))
    assert metrics["downstream_accuracy"] == 0.75 and metrics["majority_label_accuracy"] == 0.75
    assert metrics["real_length_mean"] == metrics["synthetic_length_mean"] == (2 + 3 + 5) / 3


def test_metrics_without_labels_are_nan_and_shifted_embeddings_have_fid_of_the_shift():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(500, 3))
    metrics, _ = utility_metrics(len(x), x.sum(axis=0), x.T @ x, 0.0, 0.0, length_histogram(["a"]), x + 2.0,
                                 ["a b"], [])
    assert np.isnan(metrics["downstream_accuracy"]) and np.isnan(metrics["majority_label_accuracy"])
    assert abs(metrics["fid"] - 3 * 2.0**2) < 1e-6  # FID = |mu_a - mu_b|^2 when the covariances agree
    assert metrics["length_ks"] == 1.0


def test_decision_names_the_better_release_from_the_figures():
    from privtext.stages.evaluate import decision

    assert decision(0.55, 0.70, 300, 0.3).startswith("prefer the 300 public documents as they are: 70% against 55%")
    assert decision(0.70, 0.70, 300, 0.3).startswith("prefer the 300 public documents")  # a tie: no budget spent
    assert decision(0.71, 0.70, 300, 0.3).startswith("prefer the synthetic table: 71% against 70%")
    assert decision(0.71, float("nan"), 0, 0.3).startswith("no public documents to compare with")
    # the generator's own samples (no private data, no budget): what the private selection added, or not
    assert decision(0.71, 0.70, 300, 0.3, 0.60, 200).endswith("added 11% over the generator's own 200 samples (60%)")
    alone = decision(0.40, float("nan"), 0, 0.1, 0.45, 200)
    assert (alone.startswith("no public documents")
            and alone.endswith("score 45%: the private selection added nothing on this run"))
    assert decision(0.45, float("nan"), 0, 0.1, 0.45, 200).endswith("added nothing on this run")  # a tie: no budget
    assert decision(0.71, 0.70, 300, 0.3, float("nan"), 0) == decision(0.71, 0.70, 300, 0.3)
