"""``privtext demo [--all]``: the platform's products on the bundled sample, quietly.

The terminal gets one line per stage with its time (a running clock on a terminal while a stage works)
and a closing summary: rows per table, the gate's verdict with its reasons, the budget used, the
measured canary recall, the report's path and how to look at the runs. Everything else (Spark's log4j
output, the Python workers', library logs and warnings) goes to ``build/logs/demo-<time>.log``: file
descriptors 1 and 2 are redirected before Spark starts, so the JVM and its workers inherit the file.

The nightly export publishes only if its own gate passes; the override path runs only with
``--show-refusal``. ``--all`` then runs a synthetic refresh on a source of its own (``REFRESH_DATASET``:
one ledger account per secret would refuse a refresh over the export's messages) and a small DP-embedding
training on the same date. Why, and what each printed: docs/demo.md, docs/products/synthetic.md ("The
demo's refresh: a source of its own").
"""
from __future__ import annotations

import contextlib
import datetime as dt
import logging
import os
import sys
import threading
import time
from pathlib import Path

from privtext.settings import PROJECT_ROOT, Settings, resolve_uri

USEFUL_VOCABULARY = 1000  # fewer released word vectors than this cannot serve as an embedding
REFRESH_DATASET = "support_chats"
REFRESH_SAMPLE = 400  # live-chat messages of the refresh's own source (about 40% without a secret)
# SecPE at the demo's time budget (docs/products/synthetic.md): N_syn 50 from ceil(N_syn / 4 labels) * L = 104
# generated messages, one private selection (T = 1); generation is most of the refresh's CPU, and N_syn 100 and
# 200 gave the same decision (docs/benchmarks.md, "The first demo, session 23")
REFRESH_SECPE = {"n_syn": 50, "variations": 2, "rounds": 1, "clusters": 8}


def _chat_prompts():
    """The refresh's prompt set (``generate.prompts.support_chats`` unless configured): one-sentence chat
    messages, replies capped at 24 tokens (docs/products/synthetic.md)."""
    from privtext.generate.settings import PromptSet

    return PromptSet(
        random="Write one short live-chat message, a single sentence, that a customer types to an online shop's "
               "support chat about a {label} problem. Reply with the message only.",
        variation="Rewrite this {label} live-chat message from a customer with small changes in wording, keeping its "
                  "meaning and its length. Reply with the new message only.\n\nMessage: {text}",
        max_new_tokens=24)
OVERRIDE_REASON = "privtext demo --show-refusal: Faker-generated sample, not personal data"


@contextlib.contextmanager
def quiet(log_path: Path):
    """Send fds 1 and 2 (Python, the JVM started inside, its workers) and logging to ``log_path``;
    yield a stream to the terminal. Restores both fds on exit."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    terminal = os.fdopen(os.dup(saved[0]), "w", buffering=1)
    root = logging.getLogger()
    level = root.level
    with open(log_path, "ab", buffering=0) as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
    logging.basicConfig(format="%(levelname)s %(name)s: %(message)s")  # a no-op when the CLI configured it
    root.setLevel(logging.INFO)
    logging.captureWarnings(True)
    try:
        yield terminal
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved:
            os.close(fd)
        logging.captureWarnings(False)
        root.setLevel(level)
        terminal.close()


class StageLines:
    """One line per stage: name, seconds, outcome; a running clock while it works (terminals only)."""

    def __init__(self, out):
        self.out = out
        self.live = out.isatty()

    @contextlib.contextmanager
    def __call__(self, name: str):
        started = time.perf_counter()
        stop = threading.Event()
        clock = threading.Thread(target=self._tick, args=(name, started, stop), daemon=True)
        if self.live:
            clock.start()
        outcome = "done"
        try:
            yield
        except Exception as error:
            from privtext.errors import Refused
            from privtext.privacy.budget import BudgetExceeded
            from privtext.stages.publish import PublishRefused

            outcome = ("refused by the gate" if isinstance(error, PublishRefused) else "refused: over budget"
                       if isinstance(error, BudgetExceeded) else "refused" if isinstance(error, Refused)
                       else f"failed ({type(error).__name__})")
            raise
        finally:
            stop.set()
            if self.live:
                clock.join()
            self.out.write(f"\r  {name:<13s}{time.perf_counter() - started:7.1f} s  {outcome}\n")

    def _tick(self, name, started, stop):
        while not stop.wait(1.0):
            seconds = time.perf_counter() - started
            self.out.write(f"\r  {name:<13s}{seconds:7.0f} s  {'.' * (int(seconds) % 4):3s}")


def _minutes(seconds: float) -> str:
    return f"{int(seconds // 60)} min {seconds % 60:.0f} s" if seconds >= 60 else f"{seconds:.1f} s"


def nightly_export(settings: Settings, date: str, sample: Path, lines: StageLines, show_refusal: bool) -> dict:
    """The nightly sanitized export; returns its verdict: published (with the publish result) or refused (reasons)."""
    from privtext.pipelines import run_pipeline
    from privtext.privacy.budget import BudgetExceeded
    from privtext.stages.publish import PublishRefused
    from privtext.stages.runner import run_stage

    try:
        results = run_pipeline("nightly_sanitized_export", settings, date, input_path=str(sample), progress=lines)
        return {"published": True, "publish": results["publish"], "reasons": [], "retune": results.get("retune", [])}
    except PublishRefused as refusal:
        verdict = {"published": False, "publish": None, "reasons": refusal.reasons}
    except BudgetExceeded as refusal:  # nothing was sanitized: there is nothing to override
        return {"published": False, "publish": None,
                "reasons": [f"{refusal} (each demo run is a new release of the same values; `make clean` starts "
                            "over)"]}
    if show_refusal:
        with lines("override"):
            verdict["publish"] = run_stage("publish", settings, date=date, pipeline="demo",
                                           target="sanitized_documents", override_gate=True, reason=OVERRIDE_REASON)
    return verdict


def with_refresh_budget(settings: Settings) -> Settings:
    """``settings`` with a budget for ``REFRESH_DATASET`` (the configured dataset's limits) unless configured."""
    budgets = settings.privacy.budgets
    if REFRESH_DATASET in budgets:
        return settings
    limits = settings.budget(settings.run.dataset)
    privacy = settings.privacy.model_copy(update={"budgets": {**budgets, REFRESH_DATASET: limits}})
    return settings.model_copy(update={"privacy": privacy})


def refresh_settings(settings: Settings) -> Settings:
    """The refresh's settings: dataset ``REFRESH_DATASET``, its own restricted zone, the demo's SecPE size."""
    lake = settings.lakehouse
    restricted = lake.zone_roots.get("restricted") or f"{lake.root.rstrip('/')}/restricted"
    lakehouse = lake.model_copy(update={"zone_roots": {**lake.zone_roots,
                                                       "restricted": f"{restricted}_{REFRESH_DATASET}"}})
    prompts = {REFRESH_DATASET: _chat_prompts(), **settings.generate.prompts}
    return settings.model_copy(update={
        "run": settings.run.model_copy(update={"dataset": REFRESH_DATASET}), "lakehouse": lakehouse,
        "secpe": settings.secpe.model_copy(update=REFRESH_SECPE),
        "generate": settings.generate.model_copy(update={"prompts": prompts})})


def synthetic_refresh(settings: Settings, date: str, sample: Path, lines: StageLines) -> list[str]:
    """The whole synthetic_refresh pipeline on the refresh's own sample (module doc); its summary lines."""
    from privtext.pipelines import run_pipeline
    from privtext.privacy.budget import BudgetExceeded
    from privtext.stages.publish import PublishRefused

    settings = refresh_settings(settings)
    try:
        results = run_pipeline("synthetic_refresh", settings, date, input_path=str(sample), progress=lines)
    except (BudgetExceeded, PublishRefused) as refusal:
        return [f"nothing published: {refusal}"]
    quality, cfg = results["evaluate"], settings.secpe
    chance = quality.majority_accuracy
    useful = quality.downstream_accuracy > chance + 0.05
    return [f"published {results['publish'].rows} synthetic chat messages ({REFRESH_DATASET}: {sample.name}, secrets "
            f"disjoint from the export's, so each product spends its own) under (p={cfg.p:g}, "
            f"r={cfg.p * cfg.r_over_p:g})-secret protection -> {_rel(results['publish'].export_dir)}",
            f"quality      N_syn {cfg.n_syn}, L {cfg.variations}, T {cfg.rounds}, K {cfg.clusters}: a classifier "
            f"trained on them scores {quality.downstream_accuracy:.0%} on {quality.real} held-out real messages "
            f"(majority label {chance:.0%}; the {quality.public_documents} secret-free messages as they are "
            f"{quality.public_only_accuracy:.0%}); FID {quality.fid:.2f}"
            f"{'' if useful else '; not useful at this size'}",
            f"decision     {quality.decision}"]


def dp_embeddings(settings: Settings, date: str, lines: StageLines) -> str:
    """train_dped on the date's documents; one line. Its refusals (noise-dominated: nothing charged; over
    budget; an empty DP vocabulary; the word vectors' gate) say "nothing published"; any other error fails."""
    from privtext.dped.aggregation import NoiseDominated
    from privtext.pipelines import run_pipeline
    from privtext.privacy.budget import BudgetExceeded
    from privtext.stages.publish import PublishRefused
    from privtext.stages.train_dped import EmptyVocabulary

    try:
        result = run_pipeline("dped_training", settings, date, progress=lines)["train_dped"]
    except (NoiseDominated, BudgetExceeded, EmptyVocabulary, PublishRefused) as refusal:
        return f"nothing published: {refusal}; not useful at this size"
    quality = ("not useful at this size" if result.released_words < USEFUL_VOCABULARY else
               "not useful at this budget (benchmarks/word_vectors/dped_frontier.py: WordSim-353 Spearman below 0.15 "
               "at eps <= 16 on 20 Newsgroups, public vectors 0.63-0.77)")
    return (f"published {result.released_words:,} word vector(s) under ({result.epsilon:.3g}, {result.delta:.0e})-DP "
            f"per {result.adjacency}: the DP vocabulary selection kept {result.queries:,} word(s) of the sample for "
            f"{result.teachers} teachers; {quality}")


def summary(settings: Settings, date: str, verdict: dict, products: dict[str, str], reports: dict[str, Path],
            show_refusal: bool) -> list[str]:
    """The closing summary lines."""
    from privtext.clusant import masking
    from privtext.ledger import Ledger, latest_measurement
    from privtext.platform.lakehouse import Lakehouse
    from privtext.platform.tracking import tracking_uri
    from privtext.report import miss_bound
    from privtext.status import budget_usage, datasets, masking_of, table_rows, usage_line

    spans = masking_of(settings, date)
    out = verdict_lines(verdict, None if spans is None else masking.words(spans), show_refusal)
    lakehouse = Lakehouse(None, settings.lakehouse)
    out += audit_lines(lakehouse, date, verdict.get("retune", []))
    entries = Ledger(lakehouse, settings).entries(settings.run.dataset)
    detection = latest_measurement(entries, dt.date.fromisoformat(date))
    if detection:
        overall = detection["spend"]["overall"]
        out.append(f"canaries     detection found {overall['recall']:.1%} of {overall['values']:,} planted values "
                   f"(up to {miss_bound(overall['recall'], overall['values']):.1%} of real ones may be missed, "
                   "95% bound); missed values are published verbatim")
    for name, line in products.items():
        first, *more = [line] if isinstance(line, str) else line
        out.append(f"{name:<13s}{first}")
        out += more
    accounts: dict[tuple, list[str]] = {}  # the one ledger: datasets under the same limits show the same use
    for dataset in datasets(settings):
        accounts.setdefault(tuple(usage_line(row) for row in budget_usage(settings, dataset)), []).append(dataset)
    for rows, names in accounts.items():
        out.append(f"budget       {', '.join(names)}{' (one account)' if len(names) > 1 else ''}:"
                   + ("" if rows else " nothing spent"))
        out += [f"               {row}" for row in rows]
    counts = [(name, rows) for name, rows in table_rows(settings) if rows is not None]
    out.append("tables       " + ", ".join(f"{name} {rows:,}" for name, rows in counts[:3]))
    for at in range(3, len(counts), 3):
        out.append("             " + ", ".join(f"{name} {rows:,}" for name, rows in counts[at:at + 3]))
    for dataset, folder in reports.items():
        out.append(f"report       {_rel(folder / 'report.html')}" + (f" ({dataset})" if len(reports) > 1 else ""))
    out.append(f"runs         privtext ui (MLflow on {tracking_uri(settings)}); privtext status --date {date}")
    return out


def verdict_lines(verdict: dict, spans: str | None, show_refusal: bool) -> list[str]:
    """The export's verdict (``nightly_export``): published, or refused with each reason and the override
    (made, or how to see it); then the staged release's spans in words (``clusant.masking.words``), if any."""
    publish = verdict["publish"]
    if verdict["published"]:
        out = [f"export       PUBLISHED {publish.rows:,} sanitized messages -> {_rel(publish.export_dir)}",
               "gate         passed: leakage audit (its controls behaved), canary recall and budget"]
    else:
        out = ["export       REFUSED by its gate, nothing published. Why:"]
        out += [f"               - {reason}" for reason in verdict["reasons"]]
        if publish is not None:
            out.append(f"override     --show-refusal published {publish.rows:,} rows anyway, recorded in the ledger")
        elif not show_refusal:
            out.append("             (privtext demo --show-refusal shows the recorded override an operator could "
                       "make)")
    if spans is not None:
        out.append(f"spans        {spans}")
    return out


def audit_lines(lakehouse, date: str, rounds: list[dict]) -> list[str]:
    """The export's audit per adversary (violation ratio against its delta threshold, Prop. 4 bound) and AmPL's
    retune rounds."""
    from privtext.platform.tables import LEAKAGE_AUDITS

    if not lakehouse.exists(LEAKAGE_AUDITS):
        return []
    rows = [r for r in lakehouse.delta_table(LEAKAGE_AUDITS).to_pyarrow_table().to_pylist()
            if str(r["date"]) == date and r["release"] == "candidate" and r["target"] == "sanitized_documents"]
    out = [f"audit        {r['adversary']}: violation ratio {r['violation_ratio']:.4f} (target below "
           f"{r['delta_target']:g}; Prop. 4: log10 p_fail {r['log10_p_fail']:.1f}) at eps {r['eps']:g} in D_k, "
           f"{r['triplets']:,} triplets" for r in rows]
    if len(rounds) > 1:
        out.append("retune       " + "; ".join(f"alpha {r['alpha']:g}: ratio {r['violation_ratio']:.4f} "
                                               f"{'passed' if r['passed'] else 'refused'}" for r in rounds))
    return out


def _rel(path) -> str:
    if "://" in str(path) and not str(path).startswith("file://"):  # an object-store URI
        return str(path)
    path = Path(str(path).removeprefix("file://"))
    return str(path.relative_to(PROJECT_ROOT)) if path.is_relative_to(PROJECT_ROOT) else str(path)


def run(settings: Settings, date: str, sample: Path, everything: bool = False, show_refusal: bool = False,
        refresh_sample: Path | None = None) -> int:
    """The demo: prints stage lines and the summary to the terminal, everything else to build/logs/.
    ``everything`` needs ``refresh_sample``: the synthetic refresh's own messages (module doc)."""
    from privtext import prepare, report
    from privtext.platform.tracking import pipeline_run
    from privtext.status import datasets

    if everything and refresh_sample is None:
        raise ValueError("privtext demo --all needs the synthetic refresh's own sample (refresh_sample)")
    # the export alone too: the one ledger may hold an earlier --all run's refresh charges, and every charge is
    # checked under the limits of every dataset in it (a dataset without a budget is a ConfigError)
    settings = with_refresh_budget(settings)
    started = time.perf_counter()
    log_path = PROJECT_ROOT / "build" / "logs" / f"demo-{dt.datetime.now():%Y%m%d-%H%M%S}.log"
    with quiet(log_path) as terminal:
        say = terminal.write
        say(f"privtext demo: the nightly sanitized export of {sample.name} for {date}"
            f"{', then a synthetic refresh and DP word embeddings' if everything else ''}\n"
            f"  (Spark and library logs: {_rel(log_path)})\n")
        background = prepare.start(settings)  # what a fresh clone lacks (trained NER, vocabularies), built meanwhile
        lines = background.waiting(StageLines(terminal))
        try:
            with pipeline_run(settings, "demo", date) as parent:
                say("nightly sanitized export\n")
                verdict = nightly_export(settings, date, sample, lines, show_refusal)
                products = {}
                if everything:
                    say(f"synthetic refresh ({REFRESH_SAMPLE} live-chat messages of its own; the same ledger)\n")
                    products["synthetic"] = synthetic_refresh(settings, date, refresh_sample, lines)
                    say("DP word embeddings\n")
                    products["embeddings"] = dp_embeddings(settings, date, lines)
                with lines("report"):
                    reports = {}
                    for dataset in datasets(settings):
                        reports[dataset] = report.write_report(settings, dt.date.fromisoformat(date), dataset,
                                                               resolve_uri(settings.publish.report_path))
                        report.log_report(parent, reports[dataset], dataset)
        except Exception as error:
            say(f"\nthe demo failed: {type(error).__name__}: {error}\n  see {_rel(log_path)}\n")
            logging.getLogger("privtext").exception("demo failed")
            return 1
        finally:
            background.stop()
        say("\n" + "\n".join(summary(settings, date, verdict, products, reports, show_refusal) + background.summary())
            + "\n")
        say(f"time         {_minutes(time.perf_counter() - started)}\n")
    return 0
