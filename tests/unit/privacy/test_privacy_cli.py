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
    out = json.loads(capsys.readouterr().out)  # the charge as the ledger would record it
    assert out["params"]["records"] == 300 and out["params"]["secrets"] == 40
    assert out["params"]["calibration"] == "gaussian" and out["spend"] == {"p": 1e-3, "r": 2e-2}
    assert out["params"]["pair"]["sigma"] > 0 and len(out["exposures"]) == 40
    assert main(["privacy", "calibrate", "--p", "1e-3", "--r-over-p", "20", "--rounds", "2",
                 "--incidence", str(path), "--method", "gaussian"]) == 0
    text = capsys.readouterr().out
    assert "NOT a guarantee" in text and f"augpe_sigma: {augpe_sigma(1e-3, 2e-2, 2)}" in text
    true = float(text.split("true_r_over_p_at_this_sigma: ")[1].split()[0])
    assert true > 20  # the single-Gaussian reading understates what its sigma gives (Jensen)


def test_convert_pr_mu_round_trips(capsys):
    assert main(["privacy", "convert", "pr-mu", "--p", "1e-4", "--r", "1e-3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert float(sp.r_from_mu(1e-4, out["mu"])) == pytest.approx(1e-3, rel=1e-9)
