"""Stage ``audit``: mPL leakage audit of a staged release with learned adversaries -> protected.leakage_audits.

``privtext run audit --target sanitized_documents --date D [--adversary transformer ...] [--eps E]``

What it samples and pairs, its distance (CluSanT's D_k as the metric d of mPL's Eq. 5), its negative controls
and what it writes: docs/products/export.md, "How the audit stage runs". A pass is a lower bound on leakage
found by these adversaries, never a certificate.
"""
from __future__ import annotations

import datetime as dt
import multiprocessing
import os
import tempfile
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame, functions as F
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DateType,
    FloatType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from privtext.ampl.audit import (
    CONTROLS,
    UnauditableError,
    audit_with_diagnostics,
    control_release,
    controls_valid,
    unit_labels,
)
from privtext.ampl.documents import DocTokens, Span, align_replacements, clean_spans, document_tokens, embed_documents
from privtext.ampl.mpl import violation_ratio
from privtext.ampl.sequences import split_rows
from privtext.clusant.date_layout import DEFAULT_KEEP
from privtext.clusant.surface_format import adjacency_group, ascii_digits, render, surface_format
from privtext.clusant.surrogates import AllowList, epoch_of
from privtext.errors import PrivtextError, Refused
from privtext.lineage import staged_state
from privtext.platform.context import RunContext
from privtext.platform.tables import DOCUMENTS, LEAKAGE_AUDITS, PII_SPANS
from privtext.privacy.mechanisms import make_rng
from privtext.stages import DEFAULT_TARGET, STAGES, TARGETS
from privtext.torch_scope import resolve_device, torch_scope

ADVERSARIES = ("transformer", "lstm", "rnn")
TOKEN_SCHEMA = StructType([
    StructField("aligned", BooleanType()),
    StructField("original", ArrayType(StringType())),
    StructField("released", ArrayType(StringType())),
    StructField("secret_id", ArrayType(StringType())),
    StructField("tier", ArrayType(StringType())),
    StructField("entity_type", ArrayType(StringType())),
    StructField("date", DateType()),
])


class AuditError(PrivtextError, RuntimeError):
    """The audit cannot run (its inputs are inconsistent)."""


class Unauditable(AuditError, Refused):
    """The night is too small to audit (too few documents with sensitive tokens, or too few held-out secrets
    the adversary never saw): the audit cannot decide, so the gate refuses (exit 3, nothing written)."""


@dataclass
class AuditStageResult:
    target: str
    eps: float
    documents: int  # audited sample
    unaligned: int  # sampled documents whose sanitized text did not parse against their spans
    sensitive_tokens: int
    candidates: int
    adversaries: int
    worst_violation_ratio: float
    passed: bool
    valid: bool  # the negative controls behaved
    controls: dict  # control -> violation ratio


def add_arguments(parser) -> None:
    parser.add_argument("--target", default=DEFAULT_TARGET, choices=sorted(STAGES["audit"].targets))
    parser.add_argument("--adversary", dest="adversaries", action="append", choices=ADVERSARIES,
                        help="repeatable; default ampl.adversaries")
    parser.add_argument("--eps", type=float, help="one mPL bound for every secret (default ampl.audit_eps, else "
                                                   "each secret at the clusant eps of its type and tier)")


def _tokens_task(max_tokens: int, allow: AllowList):
    """Executor task: each document's tokens. A span whose text is a ``clusant.allow_list`` entry is context:
    declared public, sanitize leaves it as written, and as a secret it would read as a verbatim copy."""
    def run(frames):
        for frame in frames:
            rows = []
            for text, sanitized, spans, day in zip(frame["text"], frame["sanitized_text"], frame["spans"],
                                                   frame["date"]):
                spans = clean_spans([Span(int(s["start"]), int(s["end"]), s["secret_id"], s["tier"], s["entity_type"])
                                     for s in spans if text[int(s["start"]):int(s["end"])] not in allow])
                replacements = align_replacements(text, spans, sanitized)
                if replacements is None:
                    rows.append((False, [], [], [], [], [], day))
                    continue
                doc = document_tokens(text, spans, replacements, max_tokens)
                rows.append((True, list(doc.original), list(doc.released),
                             [s.secret_id if s else None for s in doc.spans],
                             [s.tier if s else None for s in doc.spans],
                             [s.entity_type if s else None for s in doc.spans], day))
            yield pd.DataFrame(rows, columns=TOKEN_SCHEMA.fieldNames())
    return run


def sample_tokens(ctx: RunContext, released: DataFrame | None, start: dt.date, max_documents: int,
                  max_tokens: int, seed: int, allow: AllowList | None = None, epoch_days: int = 1
                  ) -> tuple[list[DocTokens], int]:
    """(documents, unaligned count): at most ``max_documents`` documents with spans dated in
    [start, ctx.date], tokenized in executors and collected (O(sample), in memory only). ``released``
    (doc_id, date, sanitized_text) pairs each document with its release; None pairs it with itself
    (the identity release, for tuning where the release is simulated); ``allow``: the allow-list whose spans
    are context (``_tokens_task``); each document's ``draw`` is the surrogate epoch (``epoch_days``) of its date."""
    spans = (ctx.lakehouse.read(PII_SPANS, since=start, upto=ctx.date)
             .groupBy("doc_id", "date")
             .agg(F.collect_list(F.struct("start", "end", "secret_id", "tier", "entity_type")).alias("spans")))
    # a span's date is its document's ingest_date (detect_pii reads one date's documents): the spans' offsets
    # index the text of that delivery, not another date's (a corrected re-delivery of the same doc_id)
    texts = (ctx.lakehouse.read(DOCUMENTS, since=start, upto=ctx.date)
             .select("doc_id", "text", F.col("ingest_date").alias("date")))
    joined = spans.join(texts, ["doc_id", "date"])
    if released is None:
        joined = joined.withColumn("sanitized_text", F.col("text"))
    else:
        window = F.col("date").between(F.lit(start), F.lit(ctx.date))
        joined = joined.join(released.where(window).select("doc_id", "date", "sanitized_text"), ["doc_id", "date"])
    sample = (joined.withColumn("_key", F.xxhash64("doc_id", F.lit(seed))).orderBy("_key").limit(max_documents)
              .select("text", "sanitized_text", "spans", "date"))
    docs, unaligned = [], 0
    for row in sample.mapInPandas(_tokens_task(max_tokens, allow or AllowList()), TOKEN_SCHEMA).toLocalIterator():
        if not row.aligned:
            unaligned += 1
            continue
        spans = tuple(None if sid is None else Span(0, 0, sid, tier, etype)
                      for sid, tier, etype in zip(row.secret_id, row.tier, row.entity_type))
        docs.append(DocTokens(tuple(row.original), tuple(row.released), spans, epoch_of(row.date, epoch_days)))
    return docs, unaligned


def _tier(ctx: RunContext, entity_type: str) -> str:
    try:
        return ctx.settings.pii.tier_of(entity_type)
    except KeyError:
        return "PII"  # an unknown type: the stricter tier


PHRASE_VECTORS = StructType([StructField("i", LongType()), StructField("embedding", ArrayType(FloatType()))])
PHRASES_PER_TASK = 4096  # a task encodes them in ~1 s; a worker's first load of the encoder costs ~15-25 CPU s


def _encode_task(settings):
    def run(frames):
        from privtext.embed.encoder import encode_phrases

        for frame in frames:
            yield pd.DataFrame({"i": frame["i"], "embedding": list(encode_phrases(list(frame["phrase"]), settings))})
    return run


def encoder(ctx: RunContext):
    """``encode_phrases`` run in the Python workers, which hold the embed stage's model already; on the
    driver it would first import and load sentence-transformers (~4 s of every nightly run). The phrases
    are private tokens: they go to the executors and come back as vectors, in memory only. Each is encoded
    as ``ascii_digits`` writes it: numbers in full-width or other scripts' digits are unknown tokens to the
    encoder (one point for all of them, so a release keeping them would look like no leak at all); the
    adversary may read them in any form, and this is the one the encoder can tell apart."""
    settings = ctx.settings.embed

    def encode(phrases: list[str]) -> np.ndarray:
        phrases = [ascii_digits(p) for p in phrases]
        frame = pd.DataFrame({"i": np.arange(len(phrases), dtype=np.int64), "phrase": phrases})
        tasks = max(1, -(-len(phrases) // PHRASES_PER_TASK))  # a few hundred phrases: one worker loads the model
        out = (ctx.spark.createDataFrame(frame, "i long, phrase string").coalesce(tasks)
               .mapInPandas(_encode_task(settings), PHRASE_VECTORS).toPandas().sort_values("i"))
        if len(out) != len(phrases):
            raise AuditError(f"phrase encoding returned {len(out)} vectors for {len(phrases)} phrases")
        return np.stack(out["embedding"].to_numpy()).astype(np.float32)
    return encode


def guarantee_distance(batch, sanitizer, encode, chunk: int = 8192):
    """d of Eq. 5, the metric of the recorded guarantee: CluSanT's D_k with its k (``mechanism.metric``) between
    the sanitizer's own phrase embeddings of the two values (``sanitizer, encode = build_sanitizer(settings)``),
    so a release that keeps its eps-mLDP bound can show no violation to an exact adversary; Euclidean between
    the audit's embeddings for types the sanitizer masks (their placeholder releases nothing of the value),
    and for two values the sanitizer's encoder maps to one embedding (D_k = 0, e.g. digits it has no wordpiece
    for: the mechanism cannot tell them apart, so any belief shift between them is the adversary's, measured
    in its own distance)."""
    values = np.asarray(encode(list(batch.candidate_values)), dtype=np.float64)
    types = np.asarray(batch.candidate_types, dtype=object)
    # per type, D_k between its own candidates by index (a pair's two values share a type: its adjacency group)
    members = {t: np.flatnonzero(types == t) for t in sanitizer.per_type if (types == t).any()}
    position = np.zeros(len(types), dtype=np.int64)
    for rows in members.values():
        position[rows] = np.arange(rows.size)
    metrics = {t: sanitizer.per_type[t].mechanism.pair_metric(values[rows]) for t, rows in members.items()}

    def distance(i: np.ndarray, j: np.ndarray) -> np.ndarray:
        i, j = np.asarray(i, dtype=np.int64), np.asarray(j, dtype=np.int64)
        out = np.empty(i.size)
        for s in range(0, i.size, chunk):  # O(chunk * d) memory, whatever the number of triplets
            a, b = i[s:s + chunk], j[s:s + chunk]
            euclidean = np.linalg.norm(batch.candidates[a] - batch.candidates[b], axis=1)
            part = euclidean.copy()
            for entity_type, pair_metric in metrics.items():
                rows = np.flatnonzero(types[a] == entity_type)
                same = types[b[rows]] == entity_type
                if same.any():
                    part[rows[same]] = pair_metric(position[a[rows[same]]], position[b[rows[same]]])
                if not same.all():  # x_j of another type (no audit pairs one): the metric on the two rows
                    part[rows[~same]] = sanitizer.per_type[entity_type].mechanism.metric(values[a[rows[~same]]],
                                                                                         values[b[rows[~same]]])
            out[s:s + chunk] = np.where(part > 0, part, euclidean)  # D_k = 0: its encoder cannot tell them apart
        return out
    return distance


_NAME_WORDS = ("Alpha", "Beta", "Gamma", "Delta", "Epsilon", "Zeta", "Eta", "Theta")


def companion(entity_type: str, value: str, i: int, date_keep: str = DEFAULT_KEEP) -> str:
    """The i-th public value of ``value``'s adjacency group: a fixed public phrase written in its format (a
    name's in title case, as a name's layout class reads the case: in lower case it fell outside every
    title-case group, and a night with one lone "First" name was refused as unauditable; no digit, which a
    "Last, First" layout would not read as a name; a date's with its kept year, ``clusant.date_keep``)."""
    phrase = (f"Privtext Companion {_NAME_WORDS[i % len(_NAME_WORDS)]}" if entity_type == "PERSON"  # no digit
              else f"privtext audit companion {i}")
    return render(entity_type, phrase, surface_format(entity_type, value, date_keep))


def unpaired(groups, distance=None) -> int:
    """How many candidates the audit cannot pair: alone in their adjacency group, or (``distance`` given) in a
    group whose members are all at distance 0 from its first (one point to both encoders)."""
    members: dict = {}
    for i, g in enumerate(groups):
        members.setdefault(g, []).append(i)
    out = 0
    for rows in members.values():
        first, rest = np.full(len(rows) - 1, rows[0]), np.asarray(rows[1:], dtype=np.int64)
        if not rest.size or distance is not None and not (np.asarray(distance(first, rest)) > 0).any():
            out += len(rows)
    return out


def candidate_batch(ctx: RunContext, docs: list[DocTokens], what: str):
    """(batch, distance, sanitizer, its phrase encoder): ``docs`` laid out with the audit's candidates,
    companions and (type, format) groups, and the guarantee's metric between them; an AuditError when a
    secret has no partner to be audited against (``what`` names the run)."""
    from privtext.sanitizer_setup import build_sanitizer

    keep = ctx.settings.clusant.date_keep  # the sanitizer's classes: a date's group holds its kept year
    batch = embed_documents(docs, encoder(ctx), partial(adjacency_group, date_keep=keep),
                            partial(companion, date_keep=keep))
    sanitizer, phrase_encode = build_sanitizer(ctx.settings)
    distance = guarantee_distance(batch, sanitizer, phrase_encode)
    missing = unpaired(batch.candidate_groups, distance)
    if missing:
        raise AuditError(f"{what}: {missing} secret(s) without another value at a distinct point of their (type, "
                         "format) group, and no public companion of it: they cannot be audited, so nothing was "
                         "written (the gate refuses)")
    return batch, distance, sanitizer, phrase_encode


def run(ctx: RunContext, target: str = DEFAULT_TARGET, adversaries: list[str] | None = None,
        eps: float | None = None) -> AuditStageResult:
    ampl = ctx.settings.ampl
    kinds = tuple(dict.fromkeys(adversaries or ampl.adversaries))
    eps = eps or ampl.audit_eps  # one bound for every secret; else each at its own type's eps (below)
    rng = make_rng(ctx.settings.run.deterministic, ctx.settings.run.seed)
    start = ctx.date - dt.timedelta(days=ampl.window_days - 1)
    staged_spec = TARGETS[target].staged
    version = ctx.lakehouse.version(staged_spec)  # the rows audited and the state recorded: one snapshot
    staged = ctx.lakehouse.read(staged_spec, version, since=start, upto=ctx.date)
    staged_runs = staged_state(ctx.lakehouse, staged_spec, ctx.date, version=version, run_ids=(
        r["run_id"] for r in staged.where(F.col("date") == F.lit(ctx.date)).select("run_id").distinct().collect()))
    clusant = ctx.settings.clusant
    docs, unaligned = sample_tokens(ctx, staged, start, ampl.max_documents, ampl.max_tokens,
                                    int(rng.integers(0, 2**31 - 1)), AllowList(clusant.allow_list),
                                    clusant.surrogate_epoch_days)
    docs = [d for d in docs if any(s is not None for s in d.spans)]
    if len(docs) < ampl.min_documents:
        raise Unauditable(f"audit of {target} for {ctx.date}: {len(docs)} documents with sensitive tokens "
                         f"(ampl.min_documents = {ampl.min_documents}); nothing was written")
    batch, distance, _, _ = candidate_batch(ctx, docs, f"audit of {target} for {ctx.date}")
    candidate_eps = (np.full(len(batch.candidates), float(eps)) if eps else
                     np.array([clusant.eps_for(t, _tier(ctx, t)) for t in batch.candidate_types]))
    eps = float(candidate_eps.min())  # rows, metrics and the plot report the strictest audited bound
    train_rows, test_rows = split_rows(rng, batch.release.n, 0.2)
    truth = batch.secrets.take(test_rows).truth()
    # a unit is a secret within one surrogate epoch: only the held-out ones no training document holds are scored
    labels = unit_labels(batch.secrets.secret_ids, [d.draw for d in docs])
    units = tuple(labels[rows][labels[rows] >= 0] for rows in (train_rows, test_rows))
    releases = [("candidate", kind, batch.release) for kind in kinds]
    releases += [(c, kinds[0], control_release(batch.secrets, batch.candidates, c, rng)) for c in CONTROLS]
    cores = os.cpu_count() or 1
    # forked trainings run one torch thread each (GNU OpenMP deadlocks in a child forked after the driver's
    # pool ran) on the CPU only (a forked child cannot use CUDA once this process has): with ampl.torch_threads
    # set above 1, or on CUDA, the releases train one after the other in this process
    forked = resolve_device(ampl.device, "ampl.device") == "cpu" and (ampl.torch_threads or 1) == 1 and cores > 1
    threads = 1 if forked else ampl.torch_threads or max(1, cores // 2)
    seeds = [int(rng.integers(0, 2**31 - 1)) for _ in releases]  # drawn in order, as one after the other did

    def job(release, kind, seed):
        def run():
            with torch_scope(threads=threads):
                result, diag = audit_with_diagnostics(
                    release.take(train_rows), release.take(test_rows), batch.candidates, truth, adversary=kind,
                    eps=candidate_eps, settings=ampl, groups=np.asarray(batch.candidate_groups, dtype=object),
                    distance=distance, units=units, rng=np.random.default_rng(seed))
            return result, diag.mpl_values, {
                "violation_ratio": result.violation_ratio, "log10_p_fail": result.log10_p_fail,
                "val_mse_over_baseline": diag.posterior.val_mse / diag.baseline_mse,
                "copy_weight_max": max(diag.copy_weights.values(), default=0.0),
                "unseen_secrets": diag.unseen_secrets, "scored_observations": diag.scored_observations}
        return run

    try:
        outcomes = _in_forked_processes([job(release, kind, seed) for (_, kind, release), seed in zip(releases, seeds)],
                                       cores if forked else 1)
    except UnauditableError as error:
        raise Unauditable(f"audit of {target} for {ctx.date} is unauditable: {error}; nothing was written "
                          "(the gate refuses)") from error
    rows, curves, results = [], {}, {}
    for (name, kind, _), (result, values, metrics) in zip(releases, outcomes):
        results[name if name != "candidate" else kind] = result
        rows.append({"target": target, "date": ctx.date, "adversary": kind, "eps": result.eps,
                     "triplets": result.triplets, "violation_ratio": result.violation_ratio,
                     "delta_target": result.delta_target, "log10_p_fail": result.log10_p_fail,
                     "utility_loss": result.utility_loss, "passed": bool(result.passed), "release": name,
                     "staged_runs": staged_runs, "run_id": ctx.run_id})
        tag = kind if name == "candidate" else name
        curves[tag] = values
        ctx.tracked.log_metrics({f"{tag}_{key}": value for key, value in metrics.items()})
    valid = controls_valid(results["control_identity"], results["control_uniform"])
    for row in rows:
        row["valid"] = valid
    candidates = [r for r in rows if r["release"] == "candidate"]
    _write(ctx, target, rows)
    _track(ctx, target, eps, kinds, batch.companions, rows, curves)
    return AuditStageResult(target=target, eps=eps, documents=batch.release.n, unaligned=unaligned,
                            sensitive_tokens=int(batch.release.mask.sum()), candidates=len(batch.candidates),
                            adversaries=len(candidates),
                            worst_violation_ratio=max(r["violation_ratio"] for r in candidates),
                            passed=valid and all(r["passed"] for r in candidates), valid=valid,
                            controls={c: results[c].violation_ratio for c in CONTROLS})


_JOBS: list = []


def _set_jobs(jobs: list) -> None:
    """A forked child's start: the jobs, and one torch thread (GNU OpenMP deadlocks on a parallel region in a
    child forked after the parent's thread pool ran; one thread never enters one)."""
    import torch

    global _JOBS
    _JOBS = jobs
    torch.set_num_threads(1)


def _run_job(i: int):
    return _JOBS[i]()


def _in_forked_processes(jobs: list, workers: int) -> list:
    """``[job() for job in jobs]``, each job in a child process forked from this one, ``workers`` at once. Each
    release's adversaries seed torch's global generator (``train_adversary``), so two cannot train in one
    process at once; forked, each child has its own, seeded as in sequence, so the rows are those of the
    trainings one after the other. The jobs reach the children by the fork, not pickled (they close over the
    batch and the guarantee's distance); each returns plain values (no model) and runs on one torch thread
    on the CPU (the caller keeps CUDA trainings in this process). One worker: in this process."""
    if workers <= 1 or len(jobs) <= 1:
        return [job() for job in jobs]
    with ProcessPoolExecutor(min(workers, len(jobs)), mp_context=multiprocessing.get_context("fork"),
                             initializer=_set_jobs, initargs=(jobs,)) as pool:
        return list(pool.map(_run_job, range(len(jobs))))


def _write(ctx: RunContext, target: str, rows: list[dict]) -> None:
    """Replace the date's partition with the new rows plus the other targets' rows of that date."""
    schema = from_arrow_schema(LEAKAGE_AUDITS.schema)
    new = ctx.spark.createDataFrame([tuple(r[c] for c in LEAKAGE_AUDITS.schema.names) for r in rows], schema)
    kept = ctx.lakehouse.read(LEAKAGE_AUDITS, date=ctx.date).where(F.col("target") != target)
    ctx.lakehouse.replace_partitions(LEAKAGE_AUDITS, kept.unionByName(new), {"date": [ctx.date]})


def _track(ctx: RunContext, target: str, eps: float, kinds: tuple[str, ...], companions: int, rows: list[dict],
           curves: dict[str, np.ndarray]) -> None:
    """The run's parameters, its rows and (when tracking stores it) the trade-off plot, to MLflow."""
    ampl = ctx.settings.ampl
    ctx.tracked.log_params({"target": target, "eps": eps, "adversaries": ",".join(kinds),
                            "window_days": ampl.window_days, "max_documents": ampl.max_documents,
                            "companions": companions})
    ctx.tracked.log_dict({"rows": rows}, "audit/leakage_audits.json")
    if ctx.tracked.enabled:  # a figure nobody stores is not drawn
        _log_plot(ctx, curves, eps, ampl.delta_target, target)


def _log_plot(ctx: RunContext, curves: dict[str, np.ndarray], eps: float, delta: float, target: str) -> None:
    """Violation ratio as a function of the audited eps, per adversary (aggregates only)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    grid = np.linspace(eps / 10, 3 * eps, 60)
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for kind, values in curves.items():
        ax.plot(grid, [violation_ratio(values, e) for e in grid], label=kind)
    ax.axvline(eps, color="grey", linestyle="--", label=f"audited eps {eps:g}")
    ax.axhline(delta, color="red", linestyle=":", label=f"delta target {delta:g}")
    ax.set(xlabel="eps", ylabel="violation ratio", title=f"mPL audit: {target} {ctx.date}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "tradeoff.png")
        fig.savefig(path, dpi=100)
        plt.close(fig)
        ctx.tracked.log_artifact(path, "audit")
