"""The nightly sanitized export at growing sizes: per-stage time fitted as fixed + per-document cost,
driver and worker peak memory.

For each size (bundled sample corpus, synthetic, never printed) a fresh process (its own JVM, as a
nightly run starts) and a fresh local lakehouse on local[2] run ``nightly_sanitized_export`` exactly
as ``privtext pipeline run`` does with the same conf file (``--conf``, default ``conf/local.yaml``, the
embedded default; MLflow off; ``publish.require_audit: false`` and no per-value mLDP cap, so that the
export is written and timed whatever the gate and the budget would decide), each stage timed, the
JVM's start inside the first. A sampler thread records the peak RSS of the driver (this Python process + its
JVM) and of the largest Python worker. Then per stage and for the whole pipeline a least-squares line time = fixed +
per_doc * docs, and the hours
1,000,000 documents would take at that rate on this machine.

    .venv/bin/python benchmarks/platform/pipeline_scaling.py [--sizes 500 2000 8000 32000] [--conf conf/local.yaml]

History (``--history H``): each size also runs as the second night of a lakehouse whose first night (the
day before, its own process) loaded H other documents; ``docs{n}_after{H}_*`` beside ``docs{n}_*`` and
``docs{n}_after{H}_{stage}_extra_seconds`` show what a night pays for the nights before it (about 0 when
no stage's reads grow with history):

    .venv/bin/python benchmarks/platform/pipeline_scaling.py --sizes 500 --history 32000

On the standalone cluster (master + 2 one-core workers, separate JVMs; the peak RSS then covers the driver
only, the executors are not this process's children):

    .venv/bin/python -m privtext.platform.local_cluster --conf-out build/cluster/cluster.yaml -- \\
        .venv/bin/python benchmarks/platform/pipeline_scaling.py --conf build/cluster/cluster.yaml --master conf
"""
from __future__ import annotations

import argparse
import json
import os
import secrets
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

os.environ.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
os.environ.setdefault("PRIVTEXT_HMAC_KEY", secrets.token_hex(32))  # a throwaway run key, as the demo makes one

DATE = "2026-01-15"
DAY_BEFORE = "2026-01-14"
PIPELINE = "nightly_sanitized_export"


class PeakRss:
    """Peak resident memory (MiB) of this process, its JVM and its largest Python worker, sampled."""

    def __init__(self, every: float = 0.5):
        import psutil

        self.me, self.every, self.peak = psutil.Process(), every, {"driver": 0.0, "jvm": 0.0, "worker": 0.0}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> None:
        import psutil

        mib = lambda p: p.memory_info().rss / 2**20  # noqa: E731
        self.peak["driver"] = max(self.peak["driver"], mib(self.me))
        for child in self.me.children(recursive=True):
            try:
                kind = "jvm" if "java" in child.name() else "worker" if "python" in child.name() else None
                if kind:
                    self.peak[kind] = max(self.peak[kind], mib(child))
            except psutil.NoSuchProcess:
                continue

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self._sample()

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def run_size(n: int, root: Path, conf: str | None, master: str, lake: str, date: str,
             seed: int) -> tuple[dict[str, float], dict[str, float]]:
    import contextlib

    from pyspark.sql import SparkSession

    from privtext import sample_data
    from privtext.errors import Refused
    from privtext.pipelines import run_pipeline
    from privtext.settings import load_settings

    settings = load_settings(conf, environ={}, overrides={
        "spark": {**({} if master == "conf" else {"master": master}), "conf": {"spark.ui.enabled": "false"}},
        "lakehouse": {"root": str(root / lake)}, "tracking": {"enabled": False},
        "clusant": {"cache_dir": str(Path(__file__).resolve().parents[2] / "cache" / "clusant")},
        "publish": {"export_path": str(root / f"exports-{lake}"), "report_path": str(root / f"reports-{lake}"),
                    "require_audit": False},
        # the sample corpus repeats its planted values: at 32k documents a value's composed mLDP spend passes
        # the default per-value cap and sanitize refuses (as it must); the benchmark times the work instead
        "privacy": {"budgets": {"default": {"r_over_p_max": 50.0, "eps_max": 10.0, "delta_max": 1e-5,
                                            "mldp_eps_max": 1e12}}}})
    # unique per night
    rows = [{**row, "doc_id": f"{date}-{row['doc_id']}"} for row in sample_data.generate(n, seed=seed)]
    source = sample_data.write_jsonl(rows, root / f"docs{n}-{date}.jsonl")
    times: dict[str, float] = {}

    @contextlib.contextmanager
    def timed(stage):
        started = time.perf_counter()
        try:
            yield
        finally:
            times[stage] = time.perf_counter() - started

    with PeakRss() as rss:
        try:
            run_pipeline(PIPELINE, settings, date, input_path=str(source), progress=timed)
        except Refused as refused:  # a gate's decision; the stage ran and is timed
            print(f"docs{n}_refused: {type(refused).__name__}", file=sys.stderr)
        SparkSession.getActiveSession().stop()
    return times, rss.peak


def fit(sizes: list[int], seconds: list[float]) -> tuple[float, float]:
    import numpy as np

    per_doc, fixed = np.polyfit(np.asarray(sizes, dtype=float), np.asarray(seconds, dtype=float), 1)
    return float(fixed), float(per_doc)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 2000, 8000, 32000])
    parser.add_argument("--conf", default="conf/local.yaml", help="the environment file (none: base.yaml only)")
    parser.add_argument("--master", default="local[2]", help="the Spark master ('conf': the conf file's)")
    parser.add_argument("--history", type=int, default=0, help="documents of a night before (0: none)")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # one night in this process (a JSON line)
    parser.add_argument("--root", help=argparse.SUPPRESS)
    parser.add_argument("--lake", help=argparse.SUPPRESS)
    parser.add_argument("--date", default=DATE, help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=7, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        times, peak = run_size(args.one, Path(args.root), None if args.conf.lower() == "none" else args.conf,
                               args.master, args.lake, args.date, args.seed)
        print(json.dumps({"times": times, "peak": peak}))
        return
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        def night(n: int, lake: str, date: str = DATE, seed: int = 7) -> dict:
            """One nightly run in its own process (its own JVM, as a scheduled run starts)."""
            out = subprocess.run([sys.executable, __file__, "--one", str(n), "--conf", args.conf, "--root", tmp,
                                  "--master", args.master, "--lake", lake, "--date", date, "--seed", str(seed)],
                                 check=True, stdout=subprocess.PIPE, text=True).stdout
            return json.loads(out.strip().splitlines()[-1])

        def show(name: str, one: dict) -> None:
            print(f"{name}_total_seconds: {sum(one['times'].values()):.1f}")
            for stage, seconds in one["times"].items():
                print(f"{name}_{stage}_seconds: {seconds:.1f}")
            for kind, mib in one["peak"].items():
                print(f"{name}_peak_rss_{kind}_mib: {mib:.0f}")

        for n in args.sizes:
            one = night(n, f"lake{n}")
            results[n] = one["times"]
            show(f"docs{n}", one)
            if args.history:
                night(args.history, f"lake{n}-history", DAY_BEFORE, seed=8)
                after = night(n, f"lake{n}-history")
                show(f"docs{n}_after{args.history}", after)
                for stage, seconds in {**after["times"], "total": sum(after["times"].values())}.items():
                    fresh = sum(one["times"].values()) if stage == "total" else one["times"].get(stage, 0.0)
                    print(f"docs{n}_after{args.history}_{stage}_extra_seconds: {seconds - fresh:.1f}")
    if len(args.sizes) < 2:
        return
    stages = list(results[args.sizes[0]])
    for stage in stages + ["total"]:
        seconds = [sum(results[n].values()) if stage == "total" else results[n].get(stage, 0.0) for n in args.sizes]
        fixed, per_doc = fit(args.sizes, seconds)
        print(f"{stage}_fixed_seconds: {fixed:.1f}")
        print(f"{stage}_per_doc_ms: {1000 * per_doc:.2f}")
    fixed, per_doc = fit(args.sizes, [sum(results[n].values()) for n in args.sizes])
    print(f"hours_for_1M_docs: {(fixed + per_doc * 1_000_000) / 3600:.2f}")


if __name__ == "__main__":
    main()
