"""The demo's synthetic refresh settings: its own restricted zone and dataset, the shared ledger's zone."""
import math

from privtext import demo
from privtext.settings import load_settings


def test_the_refresh_reads_its_own_restricted_zone_and_shares_the_ledgers(tmp_path):
    settings = demo.with_refresh_budget(load_settings(None, environ={}, overrides={
        "lakehouse": {"root": str(tmp_path / "lake")}}))
    refresh = demo.refresh_settings(settings)
    assert refresh.run.dataset == demo.REFRESH_DATASET != settings.run.dataset
    assert refresh.lakehouse.zone_root("restricted") != settings.lakehouse.zone_root("restricted")
    for zone in ("protected", "published"):  # the one ledger (protected) and the published tables
        assert refresh.lakehouse.zone_root(zone) == settings.lakehouse.zone_root(zone)
    assert refresh.budget(demo.REFRESH_DATASET) == settings.budget(settings.run.dataset)
    secpe = refresh.secpe  # the demo's size: one private selection of N_syn among ceil(N_syn / 4 labels) * L per label
    assert {key: getattr(secpe, key) for key in demo.REFRESH_SECPE} == demo.REFRESH_SECPE != {
        key: getattr(settings.secpe, key) for key in demo.REFRESH_SECPE}
    assert secpe.rounds == 1 and 4 * math.ceil(secpe.n_syn / 4) * secpe.variations > secpe.n_syn >= 50
    assert refresh.generate.prompts[demo.REFRESH_DATASET].max_new_tokens == 24


def test_a_configured_refresh_budget_is_kept(tmp_path):
    tight = {"r_over_p_max": 5.0, "eps_max": 1.0, "delta_max": 1e-6, "mldp_eps_max": 10.0}
    settings = load_settings(None, environ={}, overrides={"privacy": {"budgets": {demo.REFRESH_DATASET: tight}}})
    assert demo.with_refresh_budget(settings).budget(demo.REFRESH_DATASET).r_over_p_max == 5.0
