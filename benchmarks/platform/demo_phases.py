"""CPU seconds of a ``make demo`` per stage and per process group, from ``cpu_tree.py --timeline`` and the demo's
stage lines with the time each was printed.

On a shared machine the wall time of a stage measures the other users; the CPU its processes spent while the
stage ran does not. Record a run with each output line timestamped, then read both back (standard library only):

    python3.11 benchmarks/platform/cpu_tree.py --timeline run/timeline.jsonl -- make demo 2>&1 \\
      | while IFS= read -r l; do printf '%s %s\\n' "$(date +%s.%N)" "$l"; done > run/demo.out
    python3.11 benchmarks/platform/demo_phases.py run/timeline.jsonl run/demo.out

A stage line (``  detect_pii     281.2 s  done``) is printed when the stage ends, so it started its seconds
before; the time between stage lines (the demo's start, waits outside a line) gets a row of its own. Groups:
``driver`` (``privtext demo``), ``driver-forks`` (the audit's forked trainings), ``jvm``, ``py-workers`` (Spark's
Python workers), ``prepare:<builds>`` (the background builds). Prints ``name: value`` lines, one per phase and
group, then the totals.
"""
from __future__ import annotations

import json
import re
import sys
from collections import defaultdict

STAGE = re.compile(r"^  (\S+)\s+([\d.]+) s  ")


def stages(out_path: str) -> list[tuple[str, float, float]]:
    """(pipeline:stage, start, end) from the timestamped demo output; a line naming a pipeline starts its stages."""
    found, pipeline = [], "start"
    with open(out_path, newline="\n") as f:  # the stage lines start with "\r": not a line break here
        for line in f:
            stamp, _, text = line.rstrip("\n").partition(" ")
            text = text.replace("\r", "")
            if (m := STAGE.match(text)):
                found.append((f"{pipeline}:{m.group(1)}", float(stamp) - float(m.group(2)), float(stamp)))
            elif text[:1].isalpha() and not text.startswith(("privtext", ".venv", "make")):
                pipeline = text.split()[0]
    return found


def group(label: str, argv: str, driver: str | None, pid: str) -> str:
    if label in ("java", "env"):
        return "jvm"
    if "pyspark.daemon" in argv or "pyspark.worker" in argv:  # privtext.platform.spark_daemon pyspark.worker
        return "py-workers"
    if "privtext.prepare" in argv:
        return "prepare:" + "+".join(argv.split("privtext.prepare", 1)[1].split())
    if label == "python:privtext":
        return "driver" if pid == driver else "driver-forks"
    return label


def main(argv: list[str]) -> int:
    if len(argv) != 2:  # `make bench` runs every script bare: nothing to read
        print("usage: demo_phases.py TIMELINE.jsonl DEMO.out", file=sys.stderr)
        return 0
    with open(argv[0]) as f:
        samples = [json.loads(line) for line in f]
    driver = next((pid for s in samples for pid, (label, _, _) in s["procs"].items() if label == "python:privtext"),
                  None)
    groups = {pid: group(label, argv or "", driver, pid) for s in samples
              for pid, (label, _, argv) in s["procs"].items()}
    times = [s["t"] for s in samples]

    def cpu_at(t: float) -> dict[str, float]:
        before = [s for s, at in zip(samples, times) if at <= t]
        return {pid: v[1] for pid, v in before[-1]["procs"].items()} if before else {}

    rows, last = [], times[0]
    for name, start, end in stages(argv[1]):
        if start - last > 1:
            rows.append(("between" if rows else "start", last, start))
        rows.append((name, start, end))
        last = end
    rows.append(("end", last, times[-1]))
    totals: dict[str, float] = defaultdict(float)
    for name, start, end in rows:
        a, b = cpu_at(start), cpu_at(end)
        spent: dict[str, float] = defaultdict(float)
        for pid, cpu in b.items():
            spent[groups[pid]] += cpu - a.get(pid, 0.0)
        print(f"{name}_wall_seconds: {end - start:.0f}\n{name}_cpu_seconds: {sum(spent.values()):.1f}")
        for g, cpu in sorted(spent.items()):
            totals[g] += cpu
            if cpu >= 0.5:
                print(f"{name}_cpu_seconds_{g}: {cpu:.1f}")
    print(f"wall_seconds: {times[-1] - times[0]:.0f}\ncpu_seconds: {sum(totals.values()):.1f}")
    for g, cpu in sorted(totals.items(), key=lambda kv: -kv[1]):
        print(f"cpu_seconds_{g}: {cpu:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
