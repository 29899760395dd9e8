"""``privtext``: run stages and the demo pipeline, query the zones, generate sample data."""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys

from privtext.errors import PrivtextError, report_error
from privtext.settings import LOG_FORMAT, PROJECT_ROOT, ZONES, load_settings, use_offline_models


def _settings(args):
    return load_settings(args.conf)


def cmd_run(args) -> int:
    from privtext.stages.runner import run_options

    result = run_options(args.stage, _settings(args), args.options)
    print(json.dumps({"stage": args.stage, **result.__dict__}, default=str))
    return 0


def cmd_init(args) -> int:
    from privtext.platform.context import RunContext

    ctx = RunContext.create(_settings(args))
    print(f"tables ready under {ctx.settings.lakehouse.root}")
    return 0


def _format_rows(columns, rows, fmt: str) -> str:
    if fmt == "json":
        return "\n".join(json.dumps(dict(zip(columns, r)), default=str, ensure_ascii=False) for r in rows)
    if fmt == "csv":
        import csv
        import io

        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow(columns)
        writer.writerows(rows)
        return out.getvalue().rstrip("\n")
    cells = [[str(c) for c in columns]] + [["NULL" if v is None else str(v) for v in r] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    lines = [" | ".join(v.ljust(w) for v, w in zip(row, widths)) for row in cells]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def cmd_sql(args) -> int:
    from privtext.commands.sql import query

    logging.getLogger("SQLQueryContextLogger").setLevel(logging.CRITICAL)  # a failed query: our one line only
    columns, rows = query(_settings(args), args.statement, args.limit)
    print(_format_rows(columns, rows, args.format))
    return 0


def cmd_sample_data(args) -> int:
    from privtext import sample_data

    path = sample_data.write_jsonl(sample_data.generate(args.n, seed=args.seed), args.out)
    print(f"wrote {args.n} messages to {path}")
    return 0


def sample_path(n: int, seed: int, corpus: str = "email"):
    from privtext import sample_data

    name = f"messages-{n}-{seed}.jsonl" if corpus == "email" else f"{corpus}-{n}-{seed}.jsonl"
    sample = PROJECT_ROOT / "build" / "sample" / name
    if not sample.exists():
        sample_data.write_jsonl(sample_data.generate(n, seed=seed, corpus=corpus), sample)
    return sample


def cmd_pipeline_run(args) -> int:
    """Prints every stage's result as JSON; a refused run prints the same, its refusal last (the gate's failed
    checks and what to do), then the one ``privtext: refused:`` line on stderr and exit 3."""
    from privtext.errors import Refused
    from privtext.pipelines import refusal_summary, run_pipeline

    refused = None
    try:
        results = run_pipeline(args.name, _settings(args), args.date, input_path=args.input, skip=tuple(args.skip))
    except Refused as refusal:
        refused, results = refusal, refusal_summary(refusal, args.date)
    print(json.dumps({stage: getattr(result, "__dict__", result) for stage, result in results.items()}, default=str,
                     indent=2))
    return 0 if refused is None else report_error(refused)


def demo_key(settings):
    """Without a configured HMAC key, the demo makes a random local one (build/demo-hmac.key, kept)."""
    import secrets

    if settings.run.hmac_key_file or os.environ.get(settings.run.hmac_key_env):
        return settings
    key_file = PROJECT_ROOT / "build" / "demo-hmac.key"
    if not key_file.exists():
        key_file.parent.mkdir(parents=True, exist_ok=True)
        key_file.write_text(secrets.token_hex(32))
        key_file.chmod(0o600)
    return settings.model_copy(update={"run": settings.run.model_copy(update={"hmac_key_file": str(key_file)})})


def cmd_demo(args) -> int:
    """The nightly sanitized export on the bundled sample (``--all``: also a synthetic refresh and DP word
    embeddings), quietly; see ``privtext.demo``."""
    from privtext import demo

    settings = demo_key(_settings(args))
    chats = sample_path(demo.REFRESH_SAMPLE, args.seed, corpus="chat") if args.all else None
    return demo.run(settings, args.date, sample_path(args.n, args.seed), everything=args.all,
                    show_refusal=args.show_refusal, refresh_sample=chats)


def cmd_ui(args) -> int:
    """The MLflow UI on the local tracking store, on a free port (or ``--port``), until Ctrl-C."""
    import socket
    import subprocess

    from privtext.platform.tracking import artifact_root, tracking_uri, use_mlflow

    settings = _settings(args)
    use_mlflow(settings)  # creates the store and the experiment if this is the first look
    port = args.port
    if not port:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
    # one local user: one server process (mlflow's default is 4), without its GenAI job runner (two more)
    command = [sys.executable, "-m", "mlflow", "ui", "--backend-store-uri", tracking_uri(settings),
               "--default-artifact-root", artifact_root(settings), "--host", "127.0.0.1", "--port", str(port),
               "--workers", "1"]
    print(f"MLflow UI: http://127.0.0.1:{port}  (experiment {settings.tracking.experiment}; Ctrl-C stops it)",
          flush=True)
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env={**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"})
    try:
        return server.wait()
    except KeyboardInterrupt:
        server.terminate()
        return server.wait()


def cmd_budget_show(args) -> int:
    """The ledger's one account (every charge composed per secret, value and record, whatever its dataset)
    against the strictest budget in play, and per dataset its charges and the same spend against its own
    budget: the worst unit per guarantee, in plain words."""
    from privtext.ledger import Ledger
    from privtext.platform.lakehouse import Lakehouse
    from privtext.platform.tables import PRIVACY_LEDGER
    from privtext.privacy.budget import describe, usage

    settings = _settings(args)
    lakehouse = Lakehouse(None, settings.lakehouse)
    lakehouse.create(PRIVACY_LEDGER)
    ledger = Ledger(lakehouse, settings)
    entries = ledger.entries()
    names = sorted({e["dataset"] for e in entries} | ({args.dataset} if args.dataset else set()))
    limits = ledger.limits(args.dataset, entries)
    spent = ledger.spent(args.dataset)
    report = {"account": "one per secret, value and record: every charge composed, whatever its dataset",
              "spent": spent.to_dict(), "limits": limits.model_dump(), "charges": len(entries),
              "in_words": describe(spent, limits),
              "datasets": {d: {"charges": sum(e["dataset"] == d for e in entries),
                               "budget": settings.budget(d).model_dump(),
                               "usage": usage(spent, settings.budget(d))} for d in names}}
    if args.json:
        print(json.dumps(report, indent=2, default=str))
        return 0
    print(f"one account: {len(entries)} charge(s) of dataset(s) {', '.join(names) or '-'}, composed per unit; "
          "limits: the strictest of their budgets")
    for sentence in report["in_words"] or ["nothing spent yet."]:
        print(f"  {sentence}")
    return 0


def cmd_vacuum(args) -> int:
    """Delete files no current table version references (withdrawn publications, replaced partitions,
    files of failed writes) from the chosen zones; prints the counts per table."""
    from privtext.platform.lakehouse import Lakehouse
    from privtext.platform.tables import ALL_TABLES

    settings = _settings(args)
    lakehouse = Lakehouse(None, settings.lakehouse)
    hours = settings.lakehouse.vacuum_retention_hours if args.retention_hours is None else args.retention_hours
    zones = args.zone or ZONES
    counts = {spec.qualified_name: lakehouse.vacuum(spec, hours, dry_run=args.dry_run)
              for spec in ALL_TABLES if spec.zone in zones and lakehouse.exists(spec)}
    print(json.dumps({"retention_hours": hours, "dry_run": args.dry_run, "tables": counts}, indent=2))
    return 0


# The commands registered here; the areas' own (privacy, tune, forget, eval, report, status) import spaCy, torch and
# scipy when they register (~6 CPU s per process), so a core command (a stage run: each killed run of
# tests/integration/test_fault_injection) builds its parser without them
CORE_COMMANDS = frozenset({"run", "init", "sql", "vacuum", "sample-data", "pipeline", "demo", "ui", "budget"})


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole parser, or for a ``command`` of ``CORE_COMMANDS`` the parser without the areas' commands."""
    parser = argparse.ArgumentParser(prog="privtext", description=__doc__)
    parser.add_argument("--conf", default="conf/local.yaml", help="environment config file (default conf/local.yaml)")
    parser.add_argument("-v", "--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True)
    _add_table_commands(sub)
    _add_pipeline_commands(sub)
    if command not in CORE_COMMANDS:
        _add_area_commands(sub)
    return parser


def command_word(argv: list[str]) -> str | None:
    """The command ``argv`` names after the global options (``--conf FILE``, ``-v``), or None (``-h``, none)."""
    words = iter(argv)
    for word in words:
        if word == "--conf":
            next(words, None)
        elif not word.startswith("-"):
            return word
    return None


def _add_table_commands(sub) -> None:
    """run, init, sql, vacuum: one stage, the tables, read-only SQL, file clean-up."""
    run = sub.add_parser("run",
                         help="run one stage: privtext run STAGE [--date D] [stage options] (STAGE -h lists them)",
                         add_help=False)
    run.add_argument("stage")
    run.add_argument("options", nargs=argparse.REMAINDER)
    run.set_defaults(func=cmd_run)

    init = sub.add_parser("init", help="create the zones' tables (idempotent)")
    init.set_defaults(func=cmd_init)

    sql = sub.add_parser("sql", help="read-only Spark SQL over the published zone (sql.role: officer adds protected, "
                                     "operator reads every zone), e.g. SELECT * FROM published.x")
    sql.add_argument("statement")
    sql.add_argument("--format", choices=("table", "csv", "json"), default="table")
    sql.add_argument("--limit", type=int, help="at most this many rows (default and maximum: sql.max_rows)")
    sql.set_defaults(func=cmd_sql)

    vacuum = sub.add_parser("vacuum", help="delete files no current table version references (withdrawn "
                                           "publications, replaced partitions, failed writes)")
    vacuum.add_argument("--zone", action="append", choices=ZONES, help="zone to vacuum (repeatable; default all)")
    vacuum.add_argument("--retention-hours", type=int, help="keep removed files this long (default "
                        "lakehouse.vacuum_retention_hours); 0 removes a withdrawn publication now")
    vacuum.add_argument("--dry-run", action="store_true", help="count only, delete nothing")
    vacuum.set_defaults(func=cmd_vacuum)


def _add_pipeline_commands(sub) -> None:
    """sample-data, pipeline run, demo, ui, budget show."""
    sample = sub.add_parser("sample-data", help="write the reproducible sample corpus (JSONL)")
    sample.add_argument("--n", type=int, default=3000)
    sample.add_argument("--seed", type=int, default=7)
    sample.add_argument("--out", required=True)
    sample.set_defaults(func=cmd_sample_data)

    pipeline = sub.add_parser("pipeline", help="run a whole pipeline locally (the DAGs' stages in order)")
    pipeline_sub = pipeline.add_subparsers(dest="pipeline_command", required=True)
    pipeline_run_parser = pipeline_sub.add_parser("run", help="run pipeline NAME for a date")
    pipeline_run_parser.add_argument("name", help="nightly_sanitized_export | synthetic_refresh | dped_training")
    pipeline_run_parser.add_argument("--date", required=True)
    pipeline_run_parser.add_argument("--input", help="input file or folder (pipelines starting with ingest)")
    pipeline_run_parser.add_argument("--skip", action="append", default=[], help="stage to skip (repeatable)")
    pipeline_run_parser.set_defaults(func=cmd_pipeline_run)

    demo = sub.add_parser("demo", help="the nightly export on the sample data, quietly, then a summary")
    demo.add_argument("--n", type=int, default=1000)
    demo.add_argument("--seed", type=int, default=7)
    demo.add_argument("--date", default="2026-01-15")
    demo.add_argument("--show-refusal", action="store_true",
                      help="after a refused gate, show the recorded override path")
    demo.add_argument("--all", action="store_true", help="also a small synthetic refresh and DP word embeddings")
    demo.set_defaults(func=cmd_demo)

    ui = sub.add_parser("ui", help="the MLflow UI on the local tracking store (prints its URL)")
    ui.add_argument("--port", type=int, help="default: a free port")
    ui.set_defaults(func=cmd_ui)

    budget = sub.add_parser("budget", help="privacy budgets and what the ledger says was spent")
    budget_sub = budget.add_subparsers(dest="budget_command", required=True)
    show = budget_sub.add_parser("show", help="composed spend vs budget per dataset")
    show.add_argument("--dataset")
    show.add_argument("--json", action="store_true", help="the composed spend as JSON")
    show.set_defaults(func=cmd_budget_show)


def _add_area_commands(sub) -> None:
    """The commands each area registers: privacy, tune sanitize, eval pii, report, status."""
    try:
        from privtext.privacy import cli as privacy_cli
    except ImportError:
        privacy_cli = None
    if privacy_cli is not None:
        privacy_cli.register(sub)
    from privtext.commands import audit as ampl_cli, forget as forget_cli, pii as pii_cli

    ampl_cli.register(sub)  # privtext tune sanitize
    forget_cli.register(sub)
    pii_cli.register(sub)
    from privtext import report, status

    report.register(sub)
    status.register(sub)


def main(argv: list[str] | None = None) -> int:
    use_offline_models()
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(command_word(argv)).parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format=LOG_FORMAT)
    try:
        return args.func(args)
    except PrivtextError as error:
        return report_error(error)
    except Exception as error:  # noqa: BLE001 - an unexpected failure still ends in one line unless -v
        if args.verbose:
            raise
        return report_crash(error)


# Causes a crashed Spark job names in its (otherwise private-row-quoting) message, and what each means.
SPARK_CAUSES = (
    ("Python worker exited unexpectedly", "a Spark Python worker crashed (most often out of memory)"),
    ("OutOfMemoryError", "the JVM ran out of memory (spark.driver.memory / spark.executor.memory)"),
    ("No space left on device", "the disk is full (spark.local.dir, the lakehouse root)"),
)


def report_crash(error: Exception) -> int:
    """An unexpected failure as one stderr line: its type and the cause Spark names, never its message or
    traceback (either may quote private rows); ``-v`` re-raises it whole. Exit code 1."""
    text = str(error)
    cause = next((why for marker, why in SPARK_CAUSES if marker in text), None)
    print(f"privtext: failed: {type(error).__name__}{f' ({cause})' if cause else ''}; the run can be rerun "
          "(stages write atomically); -v prints the traceback, which may quote private text", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
