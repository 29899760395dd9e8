"""Paths shared by tests (importable because pytest runs with the tests folder on sys.path)."""
from pathlib import Path

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
SHARED_DATA_READY = (SHARED_DATA / "README.md").exists()


def make_budget_settings(root):
    """Settings with a tight, known budget for dataset 'reviews' (ledger tests)."""
    from privtext.platform.config import load_settings

    budget = {"r_over_p_max": 10.0, "eps_max": 2.0, "delta_max": 1e-5, "mldp_eps_max": 20.0}
    return load_settings(None, environ={}, overrides={
        "lakehouse": {"root": str(root)}, "tracking": {"enabled": False},
        "privacy": {"budgets": {"reviews": budget}},
    })
