"""The publish gate's pure parts: audit checks, the outcome, the canary check, fixed-seed runs, the manifest."""

from privtext.stages import publish

ROW = {"adversary": "rnn", "eps": 2.0, "violation_ratio": 0.01, "delta_target": 0.05, "passed": True,
       "release": "candidate", "valid": True, "staged_runs": "a,b", "run_id": "x"}


def test_gate_decision_names_each_failing_check():
    assert publish.gate_decision([ROW], ["rnn"], ["b", "a"]) == []
    assert publish.gate_decision([ROW], ["rnn", "lstm"], ["a", "b"]) == ["no leakage audit by lstm"]
    assert "stale" in publish.gate_decision([ROW], ["rnn"], ["a"])[0]
    assert "invalid" in publish.gate_decision([{**ROW, "valid": False}], ["rnn"], ["a", "b"])[0]
    assert "found leakage" in publish.gate_decision([{**ROW, "passed": False, "violation_ratio": 0.2}], ["rnn"],
                                                    ["a", "b"])[0]
    unsure = publish.gate_decision([{**ROW, "passed": False, "log10_p_fail": -1.5}], ["rnn"], ["a", "b"])[0]
    assert "not confidently" in unsure and "-1.50" in unsure
    control = {**ROW, "release": "control_identity"}  # a control row never stands in for the audit
    assert publish.gate_decision([control], ["rnn"], ["a", "b"]) == ["no leakage audit by rnn"]
    assert publish.gate_decision([], [], ["a"]) == ["no leakage audit by any adversary"]


def test_gate_decision_names_the_misbehaving_control():
    invalid = {**ROW, "valid": False}
    identity_passed = {**ROW, "release": "control_identity", "passed": True}  # must fail: it leaks everything
    uniform_ok = {**ROW, "release": "control_uniform", "passed": True}
    (reason,) = publish.gate_decision([invalid, identity_passed, uniform_ok], ["rnn"], ["a", "b"])
    assert "(control_identity)" in reason
    (reason,) = publish.gate_decision([invalid], ["rnn"], ["a", "b"])
    assert "(missing)" in reason


def test_gate_outcome():
    assert publish.gate_outcome(True, True, [], False) == "passed"
    assert publish.gate_outcome(True, True, ["x"], False) == "refused"
    assert publish.gate_outcome(True, True, ["x"], True) == "override"
    assert publish.gate_outcome(True, False, [], False) == "not_required"
    assert publish.gate_outcome(True, False, ["low recall"], False) == "refused"  # the canary check still counts
    assert publish.gate_outcome(False, True, [], False) == "ledger_charged"


def test_deterministic_runs_only_among_the_staged_runs():
    entries = [{"run_id": "a", "params": {"deterministic": True}}, {"run_id": "b", "params": {}},
               {"run_id": "c", "params": {"deterministic": True}}]
    assert publish.deterministic_runs(entries, {"a", "b"}) == ["a"]
    assert publish.deterministic_runs(entries, {"b"}) == []


def test_manifest_lists_files_under_their_version_and_counts_rows_of_one_format():
    files = [{"path": "p.parquet", "format": "parquet", "rows": 3}, {"path": "p.jsonl", "format": "jsonl", "rows": 3},
             {"path": "q.parquet", "format": "parquet", "rows": 2}]
    summary = [{"method": "clusant", "params": "{}", "run_id": "s1"}]
    entries = [{"entry_id": "e1", "guarantee": "mldp"}, {"entry_id": "e2", "guarantee": "none"}]
    m = publish.build_manifest("sanitized_documents", "2026-01-15", "pub", "v1", files, "parquet", summary,
                               entries, "passed", None, "published.sanitized_documents", 4)
    assert m["rows"] == 5 and [f["path"] for f in m["files"]] == ["v1/p.jsonl", "v1/p.parquet", "v1/q.parquet"]
    assert m["privacy"] == {"methods": ["clusant"], "params": ["{}"], "source_run_ids": ["s1"],
                            "ledger_entry_ids": ["e1", "e2"], "guarantees": ["mldp", "none"]}
    assert m["gate"] == {"outcome": "passed"} and m["detection"] is None and m["published_table"]["version"] == 4


def test_verbatim_tail_bounds_the_exact_poisson_binomial_tail_and_the_gate_uses_it():
    """The Chernoff bound is never below the exact tail (convolution of the Bernoulli draws), and the gate
    refuses a count the mechanism's expectation cannot explain, passes one it can."""
    import numpy as np

    rng = np.random.default_rng(2)
    for _ in range(20):
        probs = rng.uniform(0, 0.2, size=rng.integers(5, 60))
        pmf = np.array([1.0])
        for p in probs:
            pmf = np.convolve(pmf, [1 - p, p])
        for x in range(len(pmf)):
            assert publish.verbatim_tail(x, probs.sum()) >= pmf[x:].sum() - 1e-12
    assert publish.verbatim_problem(1, 0.3, 1000, 0.0, 1e-6) == []
    assert publish.verbatim_problem(106, 0.0, 1000, 0.0, 1e-6)  # a sanitizer that left every phone as it was
    assert publish.verbatim_problem(8, 0.3, 1000, 0.0, 1e-6) and not publish.verbatim_problem(8, 0.3, 1000, 0.01, 1e-6)
