"""Stage ``audit``: one row per adversary and release, negative controls in every run (identity fails,
uniform passes: valid), an identity "sanitizer" fails and a constant one passes, other targets' rows
survive a rerun, and no span value reaches leakage_audits or the MLflow artifacts."""
from __future__ import annotations

import datetime as dt
import hashlib
from pathlib import Path

import numpy as np
import pytest
from pyspark.sql.pandas.types import from_arrow_schema

from privtext.lineage import staged_state
from privtext.platform.context import RunContext
from privtext.platform.tables import DOCUMENTS, LEAKAGE_AUDITS, PII_SPANS, STAGED_SANITIZED_DOCUMENTS
from privtext.stages.runner import run_stage

DATE = dt.date(2026, 1, 15)
FIRST = ["Alice", "Bruno", "Chen", "Dana", "Emil", "Farah", "Gita", "Hugo", "Ines", "Jonas", "Kavya", "Lars",
         "Maya", "Nils", "Olga"]
LAST = ["Moreau", "Keller", "Wei", "Okafor", "Novak", "Haddad", "Rao", "Silva", "Tanaka", "Weber"]
NAMES = [f"{first} {last}" for last in LAST for first in FIRST]  # 150: one person per document
CITIES = ["Lisbon", "Nairobi", "Osaka", "Quito", "Tallinn", "Winnipeg", "Dakar", "Hobart"]
TINY = {"epochs": 6, "hidden_size": 16, "num_layers": 1, "heads": 2, "batch_size": 16, "dropout": 0.0,
        "triplets": 4000, "device": "cpu", "torch_threads": 1, "max_documents": 150, "min_documents": 10,
        "min_unseen_secrets": 10, "max_tokens": 24, "adversaries": ["transformer"], "pass_rule": "ratio",
        "delta_target": 0.1, "temperature": "calibrated"}


def _corpus(n=150, seed=0):
    """Each document names its own person twice and a city once, mostly the one the person's first name points
    to (correlated secrets). The cities recur in the audit's training documents, so it scores the names, each
    of which its adversary never saw (``ampl.audit``, "unseen units")."""
    rng = np.random.default_rng(seed)
    docs, spans = [], []
    for i in range(n):
        k = i % len(FIRST)
        name, city = NAMES[i], CITIES[k % len(CITIES) if rng.random() < 0.9 else int(rng.integers(len(CITIES)))]
        parts = ["Hello, this is ", name, " writing about my parcel to ", city, ". Please ask for ", name, " again."]
        text, pos, doc_spans = "", 0, []
        for j, part in enumerate(parts):
            if j % 2 == 1:
                etype, tier = ("PERSON", "PII") if part in NAMES else ("LOCATION", "PoII")
                doc_spans.append((pos, pos + len(part), etype, tier, hashlib.sha256(part.encode()).hexdigest()[:16]))
            text += part
            pos += len(part)
        docs.append((f"d{i}", text))
        spans.append(doc_spans)
    return docs, spans


def _write_inputs(ctx, sanitize):
    docs, spans = _corpus()
    spark = ctx.spark
    ctx.lakehouse.replace_partitions(DOCUMENTS, spark.createDataFrame(
        [(d, "u", t, "x", {}, DATE, "r") for d, t in docs], from_arrow_schema(DOCUMENTS.schema)),
        {"ingest_date": [DATE]})
    span_rows = [(d, e, s, t, 0.9, tier, sid, "r", DATE) for (d, _), ss in zip(docs, spans)
                 for s, t, e, tier, sid in ss]
    ctx.lakehouse.replace_partitions(PII_SPANS, spark.createDataFrame(span_rows, from_arrow_schema(PII_SPANS.schema)),
                                     {"date": [DATE]})
    sanitized = []
    for (d, text), ss in zip(docs, spans):
        out, pos = "", 0
        for s, t, *_ in ss:
            out += text[pos:s] + sanitize(text[s:t])
            pos = t
        sanitized.append((d, out + text[pos:], len(ss), len(ss), "test", "{}", "r", DATE, 0, 0.0))
    ctx.lakehouse.replace_partitions(STAGED_SANITIZED_DOCUMENTS, spark.createDataFrame(
        sanitized, from_arrow_schema(STAGED_SANITIZED_DOCUMENTS.schema)), {"date": [DATE]})


def _audits(ctx):
    return {(r.target, r.adversary, r.release): r for r in ctx.lakehouse.read(LEAKAGE_AUDITS).collect()}


@pytest.fixture
def audit_settings(tmp_path, spark):
    from conftest import make_settings

    return make_settings(tmp_path / "lake", ampl=TINY, tracking={"enabled": True})


def test_identity_release_fails_constant_release_passes_and_no_value_leaves(audit_settings):
    ctx = RunContext.create(audit_settings, date=DATE.isoformat())
    # a row of another target for the same date must survive the audit's replace
    other = ("synthetic_documents", DATE, "lstm", 1.0, 10, 0.0, 0.1, -5.0, 0.0, True, "candidate", True, "s", "old")
    ctx.lakehouse.replace_partitions(LEAKAGE_AUDITS, ctx.spark.createDataFrame(
        [other], from_arrow_schema(LEAKAGE_AUDITS.schema)), {"date": [DATE]})

    _write_inputs(ctx, lambda value: value)  # identity "sanitizer": the answer is in the release
    leak = run_stage("audit", audit_settings, date=DATE.isoformat(), eps=2.0, adversaries=["transformer", "rnn"])
    rows = _audits(ctx)
    target = "sanitized_documents"
    assert set(rows) == {(target, "transformer", "candidate"), (target, "rnn", "candidate"),
                         (target, "transformer", "control_identity"), (target, "transformer", "control_uniform"),
                         ("synthetic_documents", "lstm", "candidate")}
    for kind in ("transformer", "rnn"):
        row = rows[(target, kind, "candidate")]
        assert row.eps == 2.0 and row.triplets == TINY["triplets"] and row.delta_target == 0.1
        assert 0.0 <= row.violation_ratio <= 1.0 and row.log10_p_fail <= 0.0 and row.date == DATE
        assert row.utility_loss == pytest.approx(0.0, abs=1e-5)  # nothing was changed
        assert row.staged_runs == staged_state(ctx.lakehouse, STAGED_SANITIZED_DOCUMENTS, DATE, ["r"]) and row.valid
    assert leak.documents == 150 and leak.unaligned == 0 and leak.candidates == 158
    assert leak.valid and leak.controls["control_identity"] > 0.5 > 0.1 > leak.controls["control_uniform"]
    assert not leak.passed and leak.worst_violation_ratio > 0.5

    _write_inputs(ctx, lambda value: "somebody")  # every span replaced by one constant phrase
    strong = run_stage("audit", audit_settings, date=DATE.isoformat(), eps=2.0)
    rows = _audits(ctx)
    assert {key[2] for key in rows if key[0] == target} == {"candidate", "control_identity", "control_uniform"}
    assert strong.passed and strong.valid and rows[(target, "transformer", "candidate")].passed
    assert rows[(target, "transformer", "candidate")].utility_loss > 0.2
    assert strong.worst_violation_ratio < leak.worst_violation_ratio / 3

    # nothing raw outside restricted: no span value in the audit table or any MLflow artifact
    table_text = " ".join(str(tuple(r)) for r in ctx.lakehouse.read(LEAKAGE_AUDITS).collect())
    artifacts = [p for p in Path(audit_settings.lakehouse.root).rglob("*") if p.is_file() and "mlruns" in p.parts]
    assert any(p.suffix == ".png" for p in artifacts) and any(p.suffix == ".json" for p in artifacts)
    blobs = [p.read_bytes() for p in artifacts]
    for value in NAMES + CITIES + ["parcel"]:
        assert value not in table_text
        assert all(value.encode() not in blob and value.lower().encode() not in blob for blob in blobs)


def test_phrases_encoded_in_the_workers_equal_the_drivers_encoding(settings):
    """The audit encodes its tokens in the Python workers (which hold the model): same vectors, same order
    as the driver's ``encode_phrases``, duplicates, spacing and the empty phrase included."""
    from privtext.embed.encoder import encode_phrases
    from privtext.stages.audit import encoder

    ctx = RunContext.create(settings, date=DATE.isoformat())
    phrases = [*NAMES[:7], "Chen Wei", "  Chen   Wei ", *reversed(CITIES), "Lisbon", ""]
    workers = encoder(ctx)(phrases)
    driver = encode_phrases(phrases, settings.embed)
    assert workers.dtype == np.float32 and workers.shape == driver.shape == (len(phrases), 384)
    np.testing.assert_allclose(workers, driver, atol=1e-5)  # a shuffled row would differ by ~0.5
    np.testing.assert_allclose(workers[7], workers[8], atol=1e-5)  # "Chen Wei", respaced


def test_too_few_documents_refuses_and_writes_nothing(settings):
    from conftest import make_settings
    from privtext.errors import Refused
    from privtext.stages.audit import Unauditable

    strict = make_settings(Path(settings.lakehouse.root), ampl={**TINY, "min_documents": 1000})
    ctx = RunContext.create(strict, date=DATE.isoformat())
    _write_inputs(ctx, lambda value: value)
    with pytest.raises(Unauditable) as refused:
        run_stage("audit", strict, date=DATE.isoformat())
    assert isinstance(refused.value, Refused) and refused.value.exit_code == 3
    assert ctx.lakehouse.read(LEAKAGE_AUDITS).count() == 0


def test_tune_sanitize_writes_a_conf_file_that_loads(tmp_path, spark):
    """The loop's plumbing (its steps, the conf file, the frontier rows), not the adversary's power (the tests
    above and below check that): its audits train 2 epochs on 1,000 triplets instead of 6 on 4,000."""
    from conftest import make_settings
    from privtext.commands.audit import tune_sanitize
    from privtext.settings import load_settings

    settings = make_settings(tmp_path / "lake", ampl={**TINY, "epochs": 2, "triplets": 1000, "alpha_grid": [0.5, 1.0],
                                                      "alpha_start": [0.5, 1.0], "tune_rounds": 1, "audit_eps": 2.0},
                             clusant={"entity_types": ["PERSON", "LOCATION"], "vocabulary": {"size": 20},
                                      "n_clusters": 4, "cache_dir": str(tmp_path / "cache")})
    _write_inputs(RunContext.create(settings, date=DATE.isoformat()), lambda value: value)
    out = tmp_path / "tuned" / "clusant.yaml"
    report = tune_sanitize(settings, DATE.isoformat(), out)
    loaded = load_settings(out, environ={})
    assert loaded.clusant.eps == report["eps"]
    poii = settings.clusant.eps["PoII"]  # alpha grid (0.5, 1.0) times the PoII eps
    assert report["eps"]["PII"] <= report["eps"]["PoII"] and report["eps"]["PoII"] in (poii / 2, poii)
    assert len(report["history"]) >= 2 and all(0 <= h["violation_ratio"] <= 1 for h in report["history"])
    assert all(h["utility_loss_remapped"] <= h["utility_loss"] + 1e-9 for h in report["history"])
    text = out.read_text()
    assert not any(v in text for v in NAMES + CITIES)
    from privtext.platform.tables import EPS_FRONTIER

    points = RunContext.create(settings, date=DATE.isoformat()).lakehouse.read(EPS_FRONTIER, date=DATE).collect()
    assert len(points) == len(report["history"]) and {p.source for p in points} == {"tune"}
    chosen = [p for p in points if p.chosen]  # the recommended point, for the report's frontier plot
    assert len(chosen) == 1 and (chosen[0].eps_pii, chosen[0].eps_poii) == pytest.approx(
        (report["eps"]["PII"], report["eps"]["PoII"]))


def _many_secrets_corpus(n=400, seed=1):
    """Documents each naming one of 320 people (K >= 300 distinct secrets in the sample)."""
    from faker import Faker

    fake = Faker("en_US")
    fake.seed_instance(seed)
    people = list(dict.fromkeys(fake.name() for _ in range(400)))[:320]
    rng = np.random.default_rng(seed)
    docs, spans = [], []
    for i in range(n):
        name = people[i % len(people)] if i < len(people) else people[int(rng.integers(len(people)))]
        head = "Please call back "
        text = f"{head}{name} about the refund."
        docs.append((f"d{i}", text))
        spans.append([(len(head), len(head) + len(name), "PERSON", "PII",
                       hashlib.sha256(name.encode()).hexdigest()[:16])])
    return docs, spans, people


@pytest.mark.parametrize("release,passes", [("identity", False), ("uniform", True), ("forty_percent_verbatim", False)])
def test_verdicts_at_more_than_300_secrets(tmp_path, spark, release, passes):
    """Uniform triplets would involve y's true secret ~2/K of the time (K >= 300): the true-secret audit
    fails a release that keeps names (all, or 40% of them) and passes a uniform replacement."""
    from conftest import make_settings

    settings = make_settings(tmp_path / "lake", ampl={**TINY, "max_documents": 400, "min_documents": 50})
    ctx = RunContext.create(settings, date=DATE.isoformat())
    docs, spans, people = _many_secrets_corpus()
    rng = np.random.default_rng(7)
    pick = {"identity": lambda v: v, "uniform": lambda v: people[int(rng.integers(len(people)))],
            "forty_percent_verbatim": lambda v: v if rng.random() < 0.4 else people[int(rng.integers(len(people)))]}
    _write_one_span_each(ctx, docs, spans, pick[release])
    result = run_stage("audit", settings, date=DATE.isoformat(), eps=2.0)
    assert result.candidates >= 300 and result.valid
    assert result.passed == passes, result


def _write_one_span_each(ctx, docs, spans, replace):
    """Documents, their one span each, and the staged release with each span's value replaced by ``replace``."""
    spark_ = ctx.spark
    ctx.lakehouse.replace_partitions(DOCUMENTS, spark_.createDataFrame(
        [(d, "u", t, "x", {}, DATE, "r") for d, t in docs], from_arrow_schema(DOCUMENTS.schema)),
        {"ingest_date": [DATE]})
    ctx.lakehouse.replace_partitions(PII_SPANS, spark_.createDataFrame(
        [(d, e, s, t, 0.9, tier, sid, "r", DATE) for (d, _), ss in zip(docs, spans) for s, t, e, tier, sid in ss],
        from_arrow_schema(PII_SPANS.schema)), {"date": [DATE]})
    sanitized = [(d, text[:s] + replace(text[s:t]) + text[t:], 1, 1, "test", "{}", "r", DATE, 0, 0.0)
                 for (d, text), [(s, t, *_)] in zip(docs, spans)]
    ctx.lakehouse.replace_partitions(STAGED_SANITIZED_DOCUMENTS, spark_.createDataFrame(
        sanitized, from_arrow_schema(STAGED_SANITIZED_DOCUMENTS.schema)), {"date": [DATE]})


def test_full_width_numbers_left_verbatim_fail_the_audit(tmp_path, spark):
    """Negative control (issue 38): phone numbers written in full-width digits are unknown tokens to the
    encoder, one point for all of them, so an audit encoding them as written saw no leak in a release that
    kept them verbatim (its identity control passed too). Encoded as ``ascii_digits`` writes them they are
    80 distinct points: the identity release fails, a release drawing ASCII numbers passes."""
    from conftest import make_settings

    settings = make_settings(tmp_path / "lake", ampl={**TINY, "min_documents": 20})
    ctx = RunContext.create(settings, date=DATE.isoformat())
    wide = str.maketrans("0123456789-", "０１２３４５６７８９－")
    rng = np.random.default_rng(3)
    numbers = [f"090-{rng.integers(1000, 9999)}-{rng.integers(1000, 9999)}".translate(wide) for _ in range(80)]
    head = "Call me back on "
    docs = [(f"d{i}", f"{head}{n} after five.") for i, n in enumerate(numbers)]
    spans = [[(len(head), len(head) + len(n), "PHONE_NUMBER", "PII", hashlib.sha256(n.encode()).hexdigest()[:16])]
             for n in numbers]
    _write_one_span_each(ctx, docs, spans, lambda v: v)
    kept = run_stage("audit", settings, date=DATE.isoformat(), eps=2.0)
    assert kept.valid and kept.candidates == len(set(numbers))  # distinct points: no companion needed
    assert not kept.passed and kept.worst_violation_ratio > 0.5, kept
    _write_one_span_each(ctx, docs, spans, lambda v: f"415-{rng.integers(100, 999)}-{rng.integers(1000, 9999)}")
    drawn = run_stage("audit", settings, date=DATE.isoformat(), eps=2.0)
    assert drawn.valid and drawn.passed, drawn


def test_a_redelivered_documents_spans_index_the_text_of_their_own_delivery(tmp_path, spark):
    """doc d0 delivered on two dates with other texts, each with its own spans: the audit's sample pairs each
    date's spans with that date's text (an arbitrary text per doc_id put the 2nd delivery's offsets into the
    1st text, tokens the audit then scored as the secret)."""
    from conftest import make_settings
    from privtext.stages.audit import sample_tokens

    settings = make_settings(tmp_path / "lake")
    ctx = RunContext.create(settings, date=DATE.isoformat())
    before = DATE - dt.timedelta(days=1)
    deliveries = {before: ("Call Ann Lee now.", "Ann Lee"),
                  DATE: ("Hi, please call Bob Stone about the parcel.", "Bob Stone")}
    for day, (text, value) in deliveries.items():
        ctx.lakehouse.replace_partitions(DOCUMENTS, spark.createDataFrame(
            [("d0", "u", text, "x", {}, day, "r")], from_arrow_schema(DOCUMENTS.schema)), {"ingest_date": [day]})
        start = text.index(value)
        ctx.lakehouse.replace_partitions(PII_SPANS, spark.createDataFrame(
            [("d0", "PERSON", start, start + len(value), 0.9, "PII", value, "r", day)],
            from_arrow_schema(PII_SPANS.schema)), {"date": [day]})
    docs, unaligned = sample_tokens(ctx, None, before, max_documents=10, max_tokens=32, seed=0)
    secrets = sorted(" ".join(t for t, s in zip(d.original, d.spans) if s is not None) for d in docs)
    assert unaligned == 0 and secrets == ["Ann Lee", "Bob Stone"]
