"""Stage sanitize: spans replaced in place (rest byte-identical), one surrogate per value per document,
a fixed reserved list never emitted (no data-dependent candidates), ledger charged per value before
writing, rerun of a date replaces, placeholders for types without vocabulary."""
import datetime as dt
import json
import re

import numpy as np
import pytest
from pyspark.sql import functions as F

from privtext.clusant.sanitizer import ClusantSanitizer, build_vocabularies
from privtext.platform.context import RunContext
from privtext.ledger import Ledger
from privtext.lineage import partition_state, settings_digest
from privtext.platform.tables import DOCUMENTS, PII_SPANS, STAGED_SANITIZED_DOCUMENTS, UTILITY_REPORTS
from privtext.stages import sanitize
from conftest import make_settings

DATE = dt.date(2026, 1, 15)
EPS = 40.0  # large: the nearest candidate, the input value itself, is likely


def clusant_conf(tmp_path, **kw):
    return {"entity_types": ["PERSON", "LOCATION"], "n_clusters": 4, "k": 4.0, "eps": {"PII": EPS, "PoII": EPS},
            "vocabulary": {"size": 40}, "cache_dir": str(tmp_path / "vocab-cache"),
            "metrics": {"perplexity": False, "max_documents": 1000}, **kw}


def vocab_of(settings):
    from privtext.embed.encoder import encode_phrases

    vocabs = build_vocabularies(settings.clusant, lambda p: encode_phrases(p, settings.embed), settings.embed.model,
                                cache_dir=settings.clusant.cache_dir)
    return {t: v[0] for t, v in vocabs.items()}


def write_inputs(ctx, names, city):
    """Documents whose PERSON values are PUBLIC vocabulary phrases (the hard case for exclusion)."""
    a, b = names
    d1 = f"Hello {a}, your parcel left {city} today. Bye {a}."
    last = d1.rindex(a)
    docs = [
        ("d1", d1, [(6, 6 + len(a), "PERSON", "PII", 0.9),
                    (23 + len(a), 23 + len(a) + len(city), "LOCATION", "PoII", 0.8), (last, last + len(a), "PERSON", "PII", 0.9)]),
        # unicode before the span (offsets are code points) and overlapping spans merged into one PERSON span
        ("d2", f"👋🏽 Grüße — {b} wrote from {city}! ✓", []),
        ("d3", "No entities here at all. ∑", []),
        ("d4", f"Passport X1234567 belongs to {a}.", [(9, 17, "US_PASSPORT", "PII", 0.7),
                                                      (29, 29 + len(a), "PERSON", "PII", 0.85)]),
    ]
    t2 = docs[1][1]
    s = t2.index(b)
    c = t2.index(city)
    docs[1] = ("d2", t2, [(s, s + len(b) - 2, "PERSON", "PII", 0.6), (s + 2, s + len(b), "LOCATION", "PoII", 0.9),
                          (c, c + len(city), "LOCATION", "PoII", 0.9)])
    doc_rows = [(d, "u1", text, "billing", {}, DATE, "ingest-run") for d, text, _ in docs]
    span_rows = [(d, t, s, e, score, tier, f"sid-{text[s:e]}", "detect-run", DATE) for d, text, spans in docs
                 for s, e, t, tier, score in spans]
    spark = ctx.spark
    from pyspark.sql.pandas.types import from_arrow_schema

    ctx.lakehouse.replace_partitions(DOCUMENTS, spark.createDataFrame(doc_rows, from_arrow_schema(DOCUMENTS.schema)),
                                     {"ingest_date": [DATE]})
    ctx.lakehouse.replace_partitions(PII_SPANS, spark.createDataFrame(span_rows, from_arrow_schema(PII_SPANS.schema)),
                                     {"date": [DATE]})
    merged = {"d1": docs[0][2], "d2": [(s, s + len(b), "PERSON", "PII", 0), (c, c + len(city), "LOCATION", "PoII", 0)],
              "d3": [], "d4": [(9, 17, "US_PASSPORT", "PII", 0), (29, 29 + len(a), "PERSON", "PII", 0)]}
    return {d: text for d, text, _ in docs}, merged


def utility(ctx):
    rows = ctx.lakehouse.read(UTILITY_REPORTS, date=DATE).collect()
    return {(r["target"], r["method"], r["metric"]): r["value"] for r in rows}, len(rows)


def staged(ctx):
    rows = ctx.lakehouse.read(STAGED_SANITIZED_DOCUMENTS).where(F.col("date") == F.lit(DATE)).collect()
    return {r["doc_id"]: r for r in rows}


@pytest.fixture
def setup(tmp_path, spark):
    settings = make_settings(tmp_path / "lake", clusant=clusant_conf(tmp_path))
    vocab = vocab_of(settings)
    ctx = RunContext.create(settings, date=DATE.isoformat(), run_id="run-1")
    names = (vocab["PERSON"][0], vocab["PERSON"][1])
    city = next(p for p in vocab["LOCATION"] if " " not in p and p.isascii())
    originals, spans = write_inputs(ctx, names, city)
    return settings, ctx, vocab, originals, spans, names + (city,)


def test_sanitize_replaces_spans_in_place_one_draw_per_value_reserved_list_charges_and_reruns(setup, tmp_path):
    settings, ctx, vocab, originals, spans, private = setup
    from privtext.embed.encoder import encode_phrases

    full = ClusantSanitizer.build(settings.clusant, lambda t: "PII", lambda p: encode_phrases(p, settings.embed),
                                  settings.embed.model)
    person = full.per_type["PERSON"]
    assert person.mechanism.probabilities(person.mechanism.vocab[0])[0] > 0.3  # the input itself is likely
    # a fixed public reserved list (here the first name) is never emitted; nothing depends on the data
    settings = make_settings(tmp_path / "lake", clusant=clusant_conf(tmp_path, reserved_values=[private[0]]))
    ctx = RunContext.create(settings, date=DATE.isoformat(), run_id="run-1")
    ctx.lakehouse.append_rows(UTILITY_REPORTS, [{"target": "synthetic_documents", "method": "secpe", "metric": "fid",
                                                 "value": 1.5, "details": "{}", "run_id": "run-e", "date": DATE}])

    result = sanitize.run(ctx)
    out = staged(ctx)
    assert set(out) == set(originals) and result.documents == 4
    for doc_id, text in originals.items():
        row = out[doc_id]
        pieces, pos = [], 0
        for s, e, t, *_ in spans[doc_id]:
            options = [re.escape(p) for p in sorted(vocab.get(t, []), key=len, reverse=True)] or [re.escape(f"[{t}]")]
            pieces += [re.escape(text[pos:s]), f"({'|'.join(options)})"]
            pos = e
        pieces.append(re.escape(text[pos:]))
        match = re.fullmatch("".join(pieces), row["sanitized_text"], flags=re.S)
        assert match, doc_id  # identical outside the spans, a public phrase (or placeholder) inside
        assert private[0] not in match.groups()
        if doc_id == "d1":  # the same value twice in one document: one surrogate
            assert match.group(1) == match.group(3)
        assert row["n_spans"] == len(spans[doc_id])
        assert row["n_replaced"] == sum(t in vocab for _, _, t, *_ in spans[doc_id])
        assert row["method"] == "clusant" and json.loads(row["params"])["k"] == 4.0
        assert json.loads(row["params"])["phrase_encoder"] == "static"  # the space the metric is measured in
        lineage = json.loads(row["params"])["lineage"]  # the spans it read, by content (no canary run here)
        assert lineage == {"detect_run_id": None, "canary_entry_id": None, "settings_digest": settings_digest(settings.pii),
                           "spans_state": partition_state(ctx.lakehouse, PII_SPANS, DATE)}
    assert out["d3"]["sanitized_text"] == originals["d3"]
    assert "[US_PASSPORT]" in out["d4"]["sanitized_text"]
    assert result.spans == 7 and result.replaced == 6 and result.masked == 1
    assert result.masked_by_type == {"US_PASSPORT": 1} and result.replaced_by_type == {"PERSON": 4, "LOCATION": 2}
    assert 0 < result.same_as_input <= 4  # the public city and second name can come out as themselves
    assert 0.3 < result.semantic_similarity < 1.0
    # the export's utility rows beside the synthetic refresh's row of the date (kept): names and places have no
    # format of their own, so all 6 replacements keep it; one label only: the classifier is the majority guess
    rows, _ = utility(ctx)
    export = {m: v for (t, method, m), v in rows.items() if t == "sanitized_documents" and method == "clusant"}
    assert rows[("synthetic_documents", "secpe", "fid")] == 1.5 and result.format_kept == 6
    assert export["format_kept_share"] == 1.0 and export["semantic_similarity"] == pytest.approx(result.semantic_similarity)
    # every labelled document of the date, none in the test split (d1..d4 by hash): no accuracy rows
    assert export["train_documents"] == 4 and export["test_documents"] == 0
    assert "sanitized_train_accuracy" not in export and "accuracy_gap" not in export

    entries = Ledger(ctx.lakehouse, ctx.settings).entries()
    assert sorted(e["params"]["entity_type"] for e in entries) == ["LOCATION", "PERSON"]  # no spend for placeholders
    for e in entries:
        assert e["guarantee"] == "mldp" and e["stage"] == "sanitize" and e["run_id"] == "run-1"
        assert e["spend"]["epsilon"] == EPS and e["spend"]["pure_epsilon"] >= EPS
        assert e["params"]["unit"] == "value occurrence" and e["params"]["pair"]["kind"] == "pure"
        occurrences = {x["unit"]: x["occurrences"] for x in e["exposures"]}
        if e["params"]["entity_type"] == "PERSON":  # documents holding each value: a in d1 (twice) and d4, b in d2
            assert occurrences == {f"sid-{private[0]}": 2, f"sid-{private[1][:-2]}": 1}
        assert e["params"]["k"] == 4.0 and e["params"]["metric"] == "D_k" and "linearly with k" in e["params"]["bound_note"]
        assert e["params"]["phrase_encoder"] == "static"
    assert not any(p in json.dumps([e["params"] for e in entries]) for p in private)

    # a rerun of the date (here with CusText) replaces the partition; CusText is recorded without guarantee
    again = make_settings(tmp_path / "lake", clusant=clusant_conf(tmp_path, method="custext"))
    sanitize.run(RunContext.create(again, date=DATE.isoformat(), run_id="run-2"))
    out = staged(ctx)
    assert len(out) == 4 and {r["run_id"] for r in out.values()} == {"run-2"}
    assert {r["method"] for r in out.values()} == {"custext"}
    rows, count = utility(ctx)  # the rerun replaced the export's rows of the date
    assert {m for t, m, _ in rows if t == "sanitized_documents"} == {"custext"} and count == len(rows) == 1 + len(export)
    ledger = Ledger(ctx.lakehouse, ctx.settings)
    entries = ledger.entries()
    assert [e["guarantee"] for e in entries if e["run_id"] == "run-2"] == ["none", "none"]
    assert ledger.spent(settings.run.dataset)["mldp"]["epsilon"] == 2 * EPS  # value a in two documents; custext adds none


@pytest.mark.parametrize("policy", ["mask", "refuse"])
def test_a_type_holding_a_spent_value_is_masked_and_not_charged_or_the_night_refused(setup, tmp_path, policy):
    """mldp_eps_max 100, eps 40 per document: night 1 draws every value (name a in 2 documents: 80, the
    others 40); the night after (a rerun charges again), a cannot pay 80 more. ``mask`` (default): every
    PERSON span is masked that night, not only a's (a's alone would single it out), nothing of PERSON is
    charged, the other types are drawn and charged as before, and no value passes the limit. Control,
    ``refuse``: the ledger refuses the night and nothing changes."""
    from privtext.errors import Refused

    settings, ctx, vocab, originals, spans, private = setup
    a = private[0]

    def night(run_id):
        conf = make_settings(tmp_path / "lake", clusant=clusant_conf(tmp_path, spent_values=policy),
                             privacy={"budgets": {"default": {"r_over_p_max": 50.0, "eps_max": 10.0, "delta_max": 1e-5,
                                                              "mldp_eps_max": 100.0}}})
        return sanitize.run(RunContext.create(conf, date=DATE.isoformat(), run_id=run_id)), Ledger(ctx.lakehouse, conf)

    first, ledger = night("run-1")
    assert first.spent_types == () and first.masked_by_type == {"US_PASSPORT": 1}
    assert ledger.spent(settings.run.dataset)["mldp"]["epsilon"] == 2 * EPS
    before = (staged(ctx), ledger.entries())
    if policy == "refuse":
        with pytest.raises(Refused, match="mldp_eps_max"):
            night("run-2")
        assert (staged(ctx), ledger.entries()) == before  # nothing charged, nothing written
        return
    second, ledger = night("run-2")
    out = staged(ctx)
    d1 = out["d1"]["sanitized_text"]
    assert d1.startswith("Hello [PERSON], your parcel ") and d1.endswith(" today. Bye [PERSON].") and "[LOCATION]" not in d1
    assert out["d4"]["sanitized_text"] == "Passport [US_PASSPORT] belongs to [PERSON]."
    assert out["d2"]["sanitized_text"].count("[PERSON]") == 1  # b (merged with a LOCATION span), unspent: masked too
    assert second.spent_types == ("PERSON",) and second.replaced_by_type == {"LOCATION": 2}
    assert second.masked_by_type == {"PERSON": 4, "US_PASSPORT": 1}
    tonight = [e for e in ledger.entries() if e["run_id"] == "run-2"]
    assert [e["params"]["entity_type"] for e in tonight] == ["LOCATION"]  # PERSON: nothing drawn, nothing charged
    assert f"sid-{a}" not in {x["unit"] for e in tonight for x in e["exposures"]}
    assert ledger.spent(settings.run.dataset)["mldp"]["epsilon"] == 2 * EPS  # no value above 80 <= 100
