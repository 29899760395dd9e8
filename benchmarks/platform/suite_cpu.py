"""The CPU seconds of a whole test suite, per test file: where `make test`'s time goes.

The suite is CPU-bound on two cores (both busy about 95% of each minute), so its wall time is its CPU seconds
over two, and a file's share of the CPU is its share of the wall. Under pytest-xdist each file runs on one
worker; this script samples every process of the command once a second (``/proc``: the JVMs and Spark's
Python workers included, which ``getrusage`` misses), gives each process to the xdist worker it descends
from, and each CPU second to the file that worker was running then (this module is also the pytest plugin
that logs each test's start: ``-p suite_cpu``). Processes of the background Airflow DAG run
(tests/dags/conftest.py) are counted apart. Standard library only:

    python3.11 benchmarks/platform/suite_cpu.py --out build/suite-cpu -- make test
    python3.11 benchmarks/platform/suite_cpu.py --out build/suite-cpu --report   # again, from the files

Prints ``name: value`` lines: the total, the busy cores, the CPU per program and per file (the largest
first). A process that starts and ends between two samples is missed, and a process's last second is lost.
"""
from __future__ import annotations

import argparse
import bisect
import collections
import json
import os
import subprocess
import sys
import time
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")
STARTS = "SUITE_CPU_STARTS"  # the file the plugin appends "time pid nodeid" lines to


def pytest_runtest_logstart(nodeid, location):
    """The plugin: one line per test start, with the xdist worker's pid."""
    with open(os.environ[STARTS], "a") as f:
        f.write(f"{time.time():.2f} {os.getpid()} {nodeid}\n")


def _stat(pid: str) -> tuple[int, float, int] | None:
    """(parent pid, user + system CPU seconds, start time in ticks), or None once the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / TICK, int(fields[19])


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return " ".join(a.decode(errors="replace") for a in f.read().split(b"\0") if a)[:300]
    except OSError:
        return ""


def record(command: list[str], out: Path) -> int:
    """Run ``command`` with the plugin on, sampling its process tree into ``out`` every second."""
    out.mkdir(parents=True, exist_ok=True)
    starts = out / "starts.log"
    starts.write_text("")
    env = {**os.environ, STARTS: str(starts),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).parent), os.environ.get("PYTHONPATH")])),
           "PYTEST_ADDOPTS": " ".join(filter(None, [os.environ.get("PYTEST_ADDOPTS"), "-p suite_cpu"]))}
    process = subprocess.Popen(command, env=env)
    known: dict[tuple[int, int], str] = {}  # (pid, start ticks): the command line at first sight
    last: dict[tuple[int, int], float] = {}
    with open(out / "samples.jsonl", "w") as samples, open(out / "processes.jsonl", "w") as processes:
        while process.poll() is None:
            stats = {int(p): s for p in os.listdir("/proc") if p.isdigit() and (s := _stat(p)) is not None}
            mine = {p for p, s in stats.items() if (p, s[2]) in known}
            grown = True
            while grown:  # the command's descendants, new ones included
                grown = False
                for pid, (parent, _, started) in stats.items():
                    if pid not in mine and (parent == process.pid or parent in mine):
                        known[(pid, started)] = line = _cmdline(pid)
                        processes.write(json.dumps([pid, started, parent, line, time.time()]) + "\n")
                        mine.add(pid)
                        grown = True
            deltas = []
            for pid in mine:
                parent, cpu, started = stats[pid]
                key = (pid, started)
                if known[key].split(" ")[0].endswith(("bash", "sh", "env")):  # spark-class becomes java by exec
                    if (line := _cmdline(pid)) != known[key]:
                        known[key] = line
                        processes.write(json.dumps([pid, started, parent, line, time.time()]) + "\n")
                if cpu > last.get(key, 0.0):
                    deltas.append([pid, started, round(cpu - last.get(key, 0.0), 2)])
                    last[key] = cpu
            samples.write(json.dumps({"t": round(time.time(), 2), "d": deltas}) + "\n")
            time.sleep(1)
    return process.returncode


def program(line: str) -> str:
    """A process's kind: java, a Spark Python worker, an xdist worker, the CLI ..."""
    words = line.split(" ")
    name = os.path.basename(words[0]) if words else "?"
    if name.startswith("python"):
        if "pyspark.daemon" in line or "pyspark.worker" in line:
            return "spark_python_worker"
        if "exec(eval(sys.stdin.readline()))" in line:
            return "pytest_worker"
        if "-m pytest" in line:
            return "pytest"
        if "privtext.cli" in line or "bin/privtext" in line:
            return "privtext_cli"
        return "python_other"
    return name or "?"


def report(out: Path) -> None:
    processes: dict[tuple[int, int], list] = {}
    by_pid = collections.defaultdict(list)
    for line in open(out / "processes.jsonl"):
        pid, started, parent, cmdline, seen = json.loads(line)
        if (pid, started) in processes:
            processes[(pid, started)][1] = cmdline
        else:
            processes[(pid, started)] = [parent, cmdline]
            by_pid[pid].append((started, (pid, started)))

    def parent_of(key):
        earlier = [entry for entry in by_pid.get(processes[key][0], []) if entry[0] <= key[1]]
        return max(earlier)[1] if earlier else None

    pytest_main = next((k for k, (_, c) in processes.items() if program(c) == "pytest"), None)
    workers = {k for k in processes if pytest_main and parent_of(k) == pytest_main}
    owners: dict = {}

    def owner(key):
        if key not in owners:
            chain, current = [], key
            while current is not None and current not in workers:
                chain.append(current)
                current = parent_of(current)
            airflow = any("airflow" in processes[c][1] for c in chain)
            owners[key] = ("airflow", None) if airflow else ("worker", current) if current else ("setup", None)
        return owners[key]

    starts = collections.defaultdict(list)
    for line in open(out / "starts.log"):
        at, pid, nodeid = line.rstrip("\n").split(" ", 2)
        starts[int(pid)].append((float(at), nodeid.split("::")[0]))
    for runs in starts.values():
        runs.sort()
    per_file, per_program, total, first, span = collections.Counter(), collections.Counter(), 0.0, None, 0.0
    for line in open(out / "samples.jsonl"):
        sample = json.loads(line)
        first = first or sample["t"]
        span = sample["t"] - first
        for pid, started, cpu in sample["d"]:
            key = (pid, started)
            if key not in processes:
                continue
            kind, worker = owner(key)
            if kind == "worker":
                runs = starts.get(worker[0], [])
                i = bisect.bisect_right(runs, (sample["t"], "\uffff")) - 1
                where = runs[i][1] if i >= 0 else "(collection)"
            else:
                where = f"({'the Airflow DAG run' if kind == 'airflow' else 'before or outside pytest'})"
            per_file[where] += cpu
            per_program[program(processes[key][1])] += cpu
            total += cpu
    print(f"cpu_seconds: {total:.1f}\nspan_seconds: {span:.1f}\nbusy_cores: {total / max(span, 1):.2f}")
    for name, cpu in per_program.most_common():
        print(f"cpu_seconds_{name}: {cpu:.1f}")
    for where, cpu in per_file.most_common():
        if cpu >= 1:
            print(f"cpu_seconds {where}: {cpu:.1f}")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    cut = argv.index("--") if "--" in argv else len(argv)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="build/suite-cpu", help="folder of the samples and the tests' starts")
    parser.add_argument("--report", action="store_true", help="only report on what --out holds")
    args = parser.parse_args(argv[:cut])
    if not args.report and cut == len(argv):  # `make bench` runs every script bare: nothing to measure
        print("usage: suite_cpu.py [--out DIR] -- make test | suite_cpu.py --out DIR --report", file=sys.stderr)
        return 0
    code = 0 if args.report else record(argv[cut + 1:], Path(args.out))
    report(Path(args.out))
    return code


if __name__ == "__main__":
    raise SystemExit(main())
