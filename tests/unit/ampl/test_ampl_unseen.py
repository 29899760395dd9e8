"""The audit scores only secrets whose unit the adversary never saw (issue 45; ``ampl.audit``, "unseen units").

A consistent release draws one surrogate per value and epoch and reuses it for every occurrence. An adversary
trained on documents holding another occurrence of the audited value reads its original next to its surrogate
and maps the surrogate back wherever it recurs: the linkage consistency discloses by design, which the audit
must not count as a belief shift; a leak it learns across values (identity on values it never saw) must still
fail, and a value seen only in another epoch's documents (another draw) is still scored.
"""
import numpy as np
import pytest

from privtext.ampl.audit import UnauditableError, audit_with_diagnostics, unit_labels, unseen
from privtext.ampl.mpl import true_secret_triplets
from privtext.ampl.sequences import SecretSequences
from privtext.ampl.settings import AmplSettings

TINY = AmplSettings(epochs=30, hidden_size=32, lr=3e-3, num_layers=1, heads=2, batch_size=16, dropout=0.0,
                    triplets=4000, device="cpu", pass_rule="ratio", min_unseen_secrets=20)
DIM, LENGTH, RECURRING = 6, 10, 6


def _documents(rng, n_docs):
    """Each document: random context, one of RECURRING values (nothing in the context names it) and one value of
    its own (unique). Returns (documents, candidates [RECURRING + n_docs, DIM])."""
    candidates = rng.normal(size=(RECURRING + n_docs, DIM))
    context = rng.normal(size=(40, DIM))
    emb = context[rng.integers(0, 40, size=(n_docs, LENGTH))]
    ids = np.full((n_docs, LENGTH), -1, dtype=np.int64)
    for doc in range(n_docs):
        at = rng.choice(LENGTH, size=2, replace=False)
        ids[doc, at] = (int(rng.integers(RECURRING)), RECURRING + doc)
    emb[ids >= 0] = candidates[ids[ids >= 0]]
    secrets = SecretSequences(emb.astype(np.float32), ids, (ids >= 0).astype(np.int8), np.full(n_docs, LENGTH))
    return secrets, candidates


def _release(secrets, surrogate):
    """Every sensitive position replaced by ``surrogate[secret id, document]`` (an embedding)."""
    ids = secrets.secret_ids
    rows, cols = np.nonzero(ids >= 0)
    released = secrets.embeddings.copy()
    released[rows, cols] = surrogate[ids[rows, cols], rows]
    from privtext.ampl.sequences import ReleasedSequences

    return ReleasedSequences(released.astype(np.float32), ids >= 0, secrets.embeddings, secrets.lengths)


def _consistent(rng, secrets, n_values, draws=None):
    """One random surrogate per (value, draw): the same for every occurrence of the value in one draw epoch."""
    n_docs = secrets.secret_ids.shape[0]
    draws = np.zeros(n_docs, dtype=np.int64) if draws is None else np.asarray(draws)
    table = rng.normal(size=(int(draws.max()) + 1, n_values, DIM)) * 2.0
    return table[draws].transpose(1, 0, 2)  # [value, document, DIM]


def _audit(release, secrets, train, test, cand, units=None):
    units = None if units is None else tuple(units[r][units[r] >= 0] for r in (train, test))
    return audit_with_diagnostics(release.take(train), release.take(test), cand, secrets.take(test).truth(),
                                  adversary="transformer", eps=0.5, settings=TINY, rng=np.random.default_rng(5),
                                  units=units)


def test_unseen_and_unit_labels_match_a_direct_set_computation():
    rng = np.random.default_rng(0)
    train, test = rng.integers(0, 50, size=200), rng.integers(0, 80, size=300)
    assert unseen(train, test).tolist() == [t not in set(train.tolist()) for t in test.tolist()]
    ids = np.where(rng.random((30, 7)) < 0.4, rng.integers(0, 12, size=(30, 7)), -1)
    draws = rng.integers(24000, 24003, size=30)  # epoch ordinals, as clusant.surrogates.epoch_of gives them
    labels = unit_labels(ids, draws)
    assert np.array_equal(labels < 0, ids < 0)
    pairs = {(int(i), int(d)) for i, d in zip(ids[ids >= 0], np.broadcast_to(draws[:, None], ids.shape)[ids >= 0])}
    by_label = {}
    for label, i, d in zip(labels[ids >= 0], ids[ids >= 0], np.broadcast_to(draws[:, None], ids.shape)[ids >= 0]):
        by_label.setdefault(int(label), set()).add((int(i), int(d)))
    assert all(len(v) == 1 for v in by_label.values()) and len(by_label) == len(pairs)  # a bijection
    # so a value seen only in another epoch's documents (another draw) is unseen, and scored
    for epochs, scored in (([24000, 24000], False), ([24000, 24001], True)):
        same_value = unit_labels([[3], [3]], epochs)[:, 0]  # one value in two documents
        assert unseen(same_value[:1], same_value[1:]).tolist() == [scored]


def test_triplets_are_drawn_only_from_the_eligible_observations():
    rng = np.random.default_rng(1)
    truth = rng.integers(0, 10, size=40)
    eligible = rng.random(40) < 0.3
    t = true_secret_triplets(rng, truth, rng.normal(size=(10, 3)), 5000, eligible=eligible)
    assert set(np.unique(t.obs)) == set(np.flatnonzero(eligible))
    with pytest.raises(ValueError):
        true_secret_triplets(rng, truth, rng.normal(size=(10, 3)), 10, eligible=np.zeros(40, dtype=bool))


@pytest.fixture(scope="module")
def night():
    rng = np.random.default_rng(2)
    secrets, cand = _documents(rng, 160)
    perm = rng.permutation(160)
    train, test = np.sort(perm[32:]), np.sort(perm[:32])
    fresh = rng.normal(size=(len(cand), 160, DIM)) * 2.0  # unique values: a surrogate of their own
    fresh[:RECURRING] = _consistent(rng, secrets, RECURRING)  # recurring values: one surrogate for all occurrences
    return secrets, cand, train, test, fresh


def test_a_consistent_release_is_flagged_on_recurring_values_and_not_scored_there_with_units(night):
    secrets, cand, train, test, surrogate = night
    release = _release(secrets, surrogate)
    units = unit_labels(secrets.secret_ids, np.zeros(160))
    before, _ = _audit(release, secrets, train, test, cand)
    # the adversary learnt each recurring value's surrogate from its training occurrences: about half the held-out
    # positions are recurring values, and their truth is read back
    assert before.violation_ratio > 2 * TINY.delta_target and not before.passed
    after, diag = _audit(release, secrets, train, test, cand, units)
    assert diag.unseen_secrets == 32 and diag.scored_observations == 32  # the 32 held-out documents' own values
    assert after.violation_ratio < TINY.delta_target / 2 and after.passed


def test_a_leak_on_values_the_adversary_never_saw_still_fails_with_units(night):
    secrets, cand, train, test, surrogate = night
    leaky = surrogate.copy()
    leaky[RECURRING:] = cand[RECURRING:, None, :]  # the unique values kept verbatim (the recurring ones consistent)
    result, diag = _audit(_release(secrets, leaky), secrets, train, test, cand,
                          unit_labels(secrets.secret_ids, np.zeros(160)))
    assert diag.scored_observations == 32 and result.violation_ratio > 0.5 and not result.passed


def test_too_few_unseen_secrets_is_unauditable_before_any_training():
    rng = np.random.default_rng(4)
    secrets, cand = _documents(rng, 60)
    ids = secrets.secret_ids.copy()
    ids[ids >= RECURRING] = -1  # only the recurring values: every held-out value is in the training documents
    secrets = SecretSequences(secrets.embeddings, ids, (ids >= 0).astype(np.int8), secrets.lengths)
    release = _release(secrets, _consistent(rng, secrets, RECURRING))
    units = unit_labels(ids, np.zeros(60))
    train, test = np.arange(48), np.arange(48, 60)
    with pytest.raises(UnauditableError, match="min_unseen_secrets"):
        _audit(release, secrets, train, test, cand[:RECURRING], units)
