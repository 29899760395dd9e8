"""publish --target synthetic_documents: gated by a DP ledger charge of the staging run, not by the audit."""
from __future__ import annotations

import datetime as dt

import pytest

from conftest import make_settings
from privtext.ledger import Ledger
from privtext.platform.context import RunContext
from privtext.platform.tables import PUBLISHED_SYNTHETIC_DOCUMENTS, STAGED_SYNTHETIC_DOCUMENTS
from privtext.privacy.budget import secret_charge
from privtext.stages.publish import PublishRefused
from privtext.stages.runner import run_stage
from tests_support import write_rows

DATE = "2026-05-01"


def test_synthetic_publish_needs_the_staging_runs_charge(tmp_path):
    settings = make_settings(tmp_path / "lake", publish={"export_path": str(tmp_path / "exports")},
                             run={"deterministic": False})  # fixed-seed releases are never published
    ctx = RunContext.create(settings, date=DATE)
    rows = [{"synthetic_id": f"s{i}", "text": f"synthetic message {i}", "label": "billing", "method": "secpe",
             "round": 2, "run_id": "synth-run", "date": dt.date.fromisoformat(DATE)} for i in range(3)]
    write_rows(ctx, STAGED_SYNTHETIC_DOCUMENTS, rows, {"date": [DATE]})
    with pytest.raises(PublishRefused, match="synth-run"):
        run_stage("publish", settings, date=DATE, target="synthetic_documents")
    assert ctx.lakehouse.read(PUBLISHED_SYNTHETIC_DOCUMENTS).count() == 0

    Ledger(ctx.lakehouse, settings).charge(secret_charge(settings.run.dataset, "synthesize", "synth-run", "secpe",
                                                         p=1e-4, r=1e-3, sigma=8.0, rounds=2, releases_per_round=2,
                                                         count_pmfs=[[0.0, 1.0]]), {"s1": 1})
    result = run_stage("publish", settings, date=DATE, target="synthetic_documents")
    assert (result.rows, result.gate) == (3, "ledger_charged")
    assert ctx.lakehouse.read(PUBLISHED_SYNTHETIC_DOCUMENTS).count() == 3
