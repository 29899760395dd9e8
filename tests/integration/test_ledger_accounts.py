"""Issue 33 through the real Ledger (Delta, no Spark): every exposure of a secret is counted.

Independent computation: closed-form Gaussian DP (Dong, Roth & Su 2019). Gaussian pairs compose as
mu = sqrt(sum mu_i^2), a Gaussian of L2 sensitivity g and noise z is (g / z)-GDP, and the blow-up at prior
p is r = 1 - Phi(Phi^-1(1 - p) - mu) (SecPE Lemma 3.3), computed here with scipy only. Aug-PE at (p, r)
is mu(p, r) = Phi^-1(1 - p) - Phi^-1(1 - r)-GDP for the secret whatever its record count (its noise is
scaled by the largest count), and SecPE with every record sampled (rho = 1) is a Gaussian of shift
sqrt(T m) c / sigma for a secret in c records. Each case asserts: refused exactly where the truth
exceeds the budget, and the ledger's composed r/p >= the truth (and within the PLD's 1% pessimism).
Negative controls: the understated counts of the old ledger give figures below the truth.
"""
import math

import pytest
from scipy.stats import norm

from privtext.errors import report_error
from privtext.ledger import BudgetExceeded, Ledger, LedgerBusy
from privtext.platform.lakehouse import Lakehouse
from privtext.platform.tables import PRIVACY_LEDGER
from privtext.privacy.accounting import gaussian_event
from privtext.privacy.budget import Exposure, MalformedExposures, dp_charge, secret_charge, secret_event_charge
from privtext.secpe.aug_pe import augpe_secret_sigma
from tests_support import make_budget_settings

P = 1e-4
LIMIT = 50.0  # the default budget's r_over_p_max


def truth_r_over_p(p: float, *mus: float) -> float:
    """Closed-form GDP composition: r / p of sqrt(sum mu^2)-GDP at prior p."""
    return float(norm.sf(norm.isf(p) - math.sqrt(sum(m * m for m in mus)))) / p


def mu_of(p: float, r: float) -> float:
    return float(norm.isf(p) - norm.isf(r))


def make_ledger(root, **budgets) -> Ledger:
    settings = make_budget_settings(root, r_over_p_max=LIMIT, eps_max=10.0)
    for name, limits in budgets.items():
        settings.privacy.budgets[name] = settings.privacy.budgets["reviews"].model_copy(update=limits)
    lake = Lakehouse(None, settings.lakehouse)
    lake.create(PRIVACY_LEDGER)
    return Ledger(lake, settings)


def augpe(c: int, run="aug", dataset="reviews", rounds=5):
    sigma = augpe_secret_sigma(P, 10 * P, rounds, c)
    return secret_event_charge(dataset, "synthesize", run, "aug_pe_histogram", p=P, r=10 * P,
                               event=gaussian_event(sigma, c, rounds))


def record_gaussian(z: float, run="dped", dataset="reviews"):
    return dp_charge(dataset, "train_dped", run, "gaussian", event=gaussian_event(z), delta=1e-5, unit="record")


def charged_or_refused(ledger, charge, exposures) -> tuple[bool, float]:
    """(accepted, the ledger's composed worst r/p with the charge)."""
    try:
        return True, ledger.charge(charge, exposures).secret_protection.r_over_p
    except BudgetExceeded as refusal:
        return False, refusal.total.secret_protection.r_over_p


def test_the_issue_reproduction_is_refused_at_the_true_figure(tmp_path):
    """Aug-PE at r/p 10 on a secret in 4 records, then a record-level Gaussian z = 3: truth 123.9."""
    ledger = make_ledger(tmp_path)
    ledger.charge(augpe(4), {"s": Exposure(1, 0, 4)})
    truth = truth_r_over_p(P, mu_of(P, 10 * P), 4 / 3)
    for exposures in ({"s": Exposure(1, 0, 4)}, None):  # the event's own count; a row on everyone (no counts)
        accepted, got = charged_or_refused(ledger, record_gaussian(3.0), exposures)
        assert not accepted and truth <= got <= truth * 1.01
    assert len(ledger.entries()) == 1  # nothing written by the refusals
    # negative control: the old ledger's count (records = 1) understates the secret's group, and the same
    # ledger then accepts the release at the understated figure (13.2), far under the truth
    understated = make_ledger(tmp_path / "understated")
    understated.charge(augpe(4), {"s": Exposure(1, 0, 4)})
    low = truth_r_over_p(P, mu_of(P, 10 * P), 1 / 3)
    accepted, got = charged_or_refused(understated, record_gaussian(3.0), {"s": Exposure(1, 0, 1)})
    assert accepted and low <= got <= low * 1.01 and got < truth


@pytest.mark.parametrize("c", [1, 4, 20])
def test_augpe_then_record_level_gaussian_on_a_secret_in_c_records(tmp_path, c):
    ledger = make_ledger(tmp_path)
    first = ledger.charge(augpe(c), {"s": Exposure(1, 0, c)}).secret_protection.r_over_p
    assert 10.0 <= first <= 10.0 * 1.01  # Aug-PE alone: exactly its (p, r) whatever c
    truth = truth_r_over_p(P, mu_of(P, 10 * P), c / 3.0)
    accepted, got = charged_or_refused(ledger, record_gaussian(3.0), {"s": Exposure(1, 0, c)})
    assert accepted == (truth <= LIMIT)
    assert truth <= got <= truth * 1.01
    print(f"c={c}: closed form r/p {truth:.4g}, ledger {got:.4g}, {'accepted' if accepted else 'refused'}")


def test_secpe_with_held_out_documents_holding_the_secret(tmp_path):
    """SecPE reads 2 records of secret s (3 more are in the held-out split it never reads); a record-level
    event reads all 5. The event's own count (5) scales it: refused; SecPE's count (2) would accept."""
    sigma, rounds, m = 6.0, 2, 2
    mu_secpe = math.sqrt(rounds * m) * 2 / sigma  # rho = 1: every record sampled, a Gaussian of shift sqrt(Tm) c
    ledger = make_ledger(tmp_path)
    secpe = secret_charge("reviews", "synthesize", "sp", "secpe_histogram", p=P, r=10 * P, sigma=sigma, rounds=rounds,
                          releases_per_round=m, count_pmfs=[[0.0, 0.0, 1.0], [0.0, 1.0]])
    got = ledger.charge(secpe, {"s": Exposure(1, 0, 2), "t": Exposure(1, 1, 1)}).secret_protection.r_over_p
    assert truth_r_over_p(P, mu_secpe) <= got <= truth_r_over_p(P, mu_secpe) * 1.01
    truth = truth_r_over_p(P, mu_secpe, 5 / 4.0)
    assert truth > LIMIT > truth_r_over_p(P, mu_secpe, 2 / 4.0)  # the held-out records decide
    accepted, got = charged_or_refused(ledger, record_gaussian(4.0), {"s": Exposure(1, 0, 5), "t": Exposure(1, 0, 3)})
    assert not accepted and truth <= got <= truth * 1.01
    # with 3 records in all the truth fits: accepted, and the ledger is at or above it
    truth3 = truth_r_over_p(P, mu_secpe, 3 / 4.0)
    accepted, got = charged_or_refused(ledger, record_gaussian(4.0), {"s": Exposure(1, 0, 3)})
    assert accepted and truth3 <= got <= truth3 * 1.01 and truth3 < LIMIT


def test_two_dataset_names_over_one_secret_compose_into_one_account(tmp_path):
    """Aug-PE at r/p 10 on one secret, alternately under 'reviews' and 'other' (budget r/p 500): one
    account, checked against the strictest budget in play (50): k releases are sqrt(k) mu-GDP, the 4th
    (truth 69.2) is refused although each name alone has seen at most 2."""
    ledger = make_ledger(tmp_path, other={"r_over_p_max": 500.0})
    mu = mu_of(P, 10 * P)
    names = ["reviews", "other", "reviews", "other"]
    for k, name in enumerate(names, 1):
        truth = truth_r_over_p(P, *[mu] * k)
        accepted, got = charged_or_refused(ledger, augpe(4, f"a{k}", dataset=name), {"s": Exposure(1, 0, 4)})
        assert accepted == (truth <= LIMIT) and truth <= got <= truth * 1.01
        print(f"release {k} under {name!r}: closed form r/p {truth:.4g}, ledger {got:.4g}, "
              f"{'accepted' if accepted else 'refused'}")
    assert [e["dataset"] for e in ledger.entries()] == names[:3]
    assert ledger.spent("reviews") == ledger.spent("other")  # one account: the same spend under either name
    # negative control: per-name accounts (the old ledger) hold 2 releases each, far under 'other''s 500
    assert truth_r_over_p(P, mu, mu) < LIMIT < truth_r_over_p(P, mu, mu, mu, mu)


def test_a_commit_that_keeps_conflicting_is_refused_as_busy(tmp_path, monkeypatch, capsys):
    from deltalake.exceptions import CommitFailedError

    ledger = make_ledger(tmp_path)
    tries = []

    def conflicting(*args, **kwargs):  # a fake around the ledger: every commit loses its race
        tries.append(1)
        raise CommitFailedError("concurrent append")

    monkeypatch.setattr(ledger.lakehouse, "append_rows", conflicting)
    with pytest.raises(LedgerBusy, match=r"^the ledger is busy") as busy:
        ledger.charge(augpe(1), {"s": Exposure(1, 0, 1)})
    assert len(tries) == ledger.settings.lakehouse.commit_retries + 1
    assert report_error(busy.value) == 3 and capsys.readouterr().err.startswith("privtext: refused: the ledger is busy")
    monkeypatch.undo()
    assert ledger.entries() == []  # nothing charged


@pytest.mark.parametrize("exposures, words", [
    (None, "exposures are null"),
    ({"s": Exposure(0, 0, 1)}, "integers >= 1"),
    ({"s": Exposure(1, 0, 0)}, "integers >= 1"),
    ({"s": "3"}, "integers >= 1"),
    ({"s": Exposure(1, 2, 1)}, "variant 2"),
    ({"": 1}, "non-empty string"),
])
def test_malformed_exposures_are_a_clear_error_at_charge_time(tmp_path, exposures, words):
    ledger = make_ledger(tmp_path)
    secpe = secret_charge("reviews", "synthesize", "sp", "secpe_histogram", p=P, r=10 * P, sigma=6.0, rounds=2,
                          releases_per_round=2, count_pmfs=[[0.0, 1.0], [0.0, 0.0, 1.0]])
    with pytest.raises(MalformedExposures, match=words):
        ledger.charge(secpe, exposures)
    assert ledger.entries() == []


def test_a_ledger_dataset_without_a_budget_fails_closed(tmp_path):
    """A dataset name in the ledger whose budget left the config: its promise cannot be checked, so every
    charge is refused with a config error naming it (not silently dropped from the account)."""
    from privtext.settings import ConfigError

    ledger = make_ledger(tmp_path, gone={})
    ledger.charge(augpe(1, dataset="gone"), {"s": Exposure(1, 0, 1)})
    del ledger.settings.privacy.budgets["gone"]
    with pytest.raises(ConfigError, match=r"'gone' has no privacy budget"):
        ledger.charge(augpe(1, "again"), {"s": Exposure(1, 0, 1)})
    assert len(ledger.entries()) == 1


def test_a_record_event_that_read_before_detect_pii_reaches_the_secrets_found_later(tmp_path):
    """Issue 46 (2) through the real Ledger (Delta, no Spark): train_dped reads d1..d4 before detect_pii has
    found anything (its charge keeps the records it read, keyed); detect_pii then finds s in d1..d3; Aug-PE
    at r/p 10 on s (c = 3) composes with the DPED event at g = 3: refused at the closed form. Controls: the
    old charge (exposures counted when it ran: {}) is refused as malformed, and without the join the ledger
    would have accepted the release at Aug-PE's 10."""
    from privtext.ledger import composed_spend
    from privtext.platform.tables import PII_SPANS
    from privtext.privacy.reads import read_set, run_key
    from tests_support import make_budget_settings

    settings = make_budget_settings(tmp_path, deterministic=True, r_over_p_max=LIMIT, eps_max=10.0)
    lake = Lakehouse(None, settings.lakehouse)
    lake.create(PRIVACY_LEDGER)
    lake.create(PII_SPANS)
    ledger = Ledger(lake, settings)
    read = read_set(run_key(settings.run), [(d, None) for d in ("d1", "d2", "d3", "d4")])
    dped = dp_charge("reviews", "train_dped", "dped", "gaussian", event=gaussian_event(3.0), delta=1e-5, unit="record",
                     params={"read": read})
    with pytest.raises(MalformedExposures, match="empty"):
        ledger.charge(dped, {})
    ledger.charge(dped, None)
    day = __import__("datetime").date(2026, 1, 15)
    lake.append_rows(PII_SPANS, [{"doc_id": d, "entity_type": "PERSON", "start": 0, "end": 3, "score": 0.9,
                                  "tier": "PII", "secret_id": "s", "run_id": "det", "date": day}
                                 for d in ("d1", "d2", "d3")])
    truth = truth_r_over_p(P, mu_of(P, 10 * P), 3 / 3.0)
    accepted, got = charged_or_refused(ledger, augpe(3), {"s": Exposure(1, 0, 3)})
    assert not accepted and truth <= got <= truth * 1.01 and truth > LIMIT
    (entry,) = ledger.entries()
    old = [{**entry, "params": {k: v for k, v in entry["params"].items() if k != "read"}, "exposures": []},
           {**entry, "guarantee": "secret_protection", "dp_event": augpe(3).dp_event, "params": augpe(3).params,
            "spend": augpe(3).spend, "exposures": [{"unit": "s", "occurrences": 1, "variant": 0, "records": 3}]}]
    blind = composed_spend(old, ledger.limits("reviews", old), None).secret_protection.r_over_p
    assert blind < LIMIT and truth_r_over_p(P, mu_of(P, 10 * P)) <= blind  # the old ledger: accepted
    print(f"train_dped before detect_pii, then Aug-PE: closed form r/p {truth:.4g}, ledger {got:.4g} (refused); "
          f"without the join {blind:.4g}")
