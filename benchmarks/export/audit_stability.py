"""Is the export's audit verdict stable? The same staged release audited R times per audit configuration.

Reruns the ``audit`` stage on a lakehouse that already holds a staged sanitized release (e.g. after
``privtext demo``), each rerun with another ``run.seed`` (another document sample, split, adversary
initialisation and triplet draw), under each named configuration: ``local`` (conf/local.yaml's audit,
what the demo runs) and ``base`` (conf/base.yaml's audit, production's). Prints per rerun the worst
violation ratio, its Prop. 4 bound and the verdict, then per configuration the spread and the seconds.
Nothing is published; the leakage_audits partition of the date is rewritten by every rerun.

    .venv/bin/python benchmarks/export/audit_stability.py --date 2026-01-15 [--reruns 5] [--confs local base]
"""
from __future__ import annotations

import argparse
import os
import time

os.environ.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")


def settings_for(name: str, seed: int, key_file: str | None):
    """conf/local.yaml (the demo's lakehouse, Spark, tracking) with the ``ampl`` section of ``name``:
    local (conf/local.yaml's), base (conf/base.yaml's) or another conf file's."""
    from privtext.settings import load_settings

    run = {"seed": seed, **({"hmac_key_file": key_file} if key_file else {})}
    settings = load_settings("conf/local.yaml", overrides={"run": run})
    if name != "local":
        settings = settings.model_copy(update={"ampl": load_settings(None if name == "base" else name).ampl})
    return settings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--date", default="2026-01-15")
    parser.add_argument("--reruns", type=int, default=5)
    parser.add_argument("--confs", nargs="+", default=["local", "base"], help="local, base, or a conf file")
    parser.add_argument("--key-file", default="build/demo-hmac.key")
    args = parser.parse_args()
    from privtext.stages.runner import run_stage

    for name in args.confs:
        ratios, verdicts, seconds = [], [], []
        for seed in range(args.reruns):
            settings = settings_for(name, seed, args.key_file if os.path.exists(args.key_file) else None)
            started = time.perf_counter()
            result = run_stage("audit", settings, date=args.date, pipeline="audit_stability",
                               target="sanitized_documents")
            seconds.append(time.perf_counter() - started)
            ratios.append(result.worst_violation_ratio)
            verdicts.append(result.passed)
            print(f"{name}_seed{seed}_violation_ratio: {result.worst_violation_ratio:.4f}")
            print(f"{name}_seed{seed}_passed: {int(result.passed)}")
            print(f"{name}_seed{seed}_controls: identity {result.controls['control_identity']:.3f} "
                  f"uniform {result.controls['control_uniform']:.3f}")
            print(f"{name}_seed{seed}_documents: {result.documents}")
            print(f"{name}_seed{seed}_seconds: {seconds[-1]:.1f}", flush=True)
        print(f"{name}_passed_share: {sum(verdicts)}/{len(verdicts)}")
        print(f"{name}_violation_ratio_min: {min(ratios):.4f}")
        print(f"{name}_violation_ratio_max: {max(ratios):.4f}")
        print(f"{name}_seconds_mean: {sum(seconds) / len(seconds):.1f}", flush=True)


if __name__ == "__main__":
    main()
