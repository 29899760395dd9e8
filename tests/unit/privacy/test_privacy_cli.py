"""`privtext privacy calibrate|convert` through the top-level CLI, checked against the library."""
import json

import numpy as np
import pandas as pd
import pytest

from privtext.cli import main
from privtext.privacy import secret_protection as sp
from privtext.privacy.accounting import augpe_sigma


def test_calibrate_json_matches_the_library(tmp_path, capsys):
    rng = np.random.default_rng(3)
    rows = [(f"r{i}", f"s{j}") for i in range(300) for j in rng.choice(40, size=rng.integers(1, 3), replace=False)]
    path = tmp_path / "incidence.csv"
    pd.DataFrame(rows, columns=["record_id", "secret_id"]).to_csv(path, index=False)
    assert main(["privacy", "calibrate", "--p", "1e-3", "--r-over-p", "20", "--rounds", "2",
                 "--incidence", str(path), "--method", "gaussian", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["records"] == 300 and out["secrets"] == 40
    assert out["augpe_sigma"] == pytest.approx(augpe_sigma(1e-3, 2e-2, 2))
    assert out["mu"] == pytest.approx(float(sp.mu_from_pr(1e-3, 2e-2)))
    assert out["sigma"] > 0 and out["binding_secret"].startswith("s")


def test_convert_pr_mu_round_trips(capsys):
    assert main(["privacy", "convert", "pr-mu", "--p", "1e-4", "--r", "1e-3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert float(sp.r_from_mu(1e-4, out["mu"])) == pytest.approx(1e-3, rel=1e-9)
