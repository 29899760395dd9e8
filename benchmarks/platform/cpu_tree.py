"""CPU seconds of a command and of every process it starts, sampled from /proc every half second.

``getrusage`` misses the JVM and Spark's Python workers (pyspark does not reap them), and on a shared
machine the wall time measures the other users too; the CPU seconds of the process tree do not. On two
idle cores a run cannot take less than half its CPU seconds, nor less than the CPU of its longest
single-threaded chain, so ``two_core_floor_seconds`` (CPU / 2) is what a busy machine can still say about
the idle-machine targets of issue 48. Standard library only, so it runs before ``make setup``:

    python3.11 benchmarks/platform/cpu_tree.py [--json OUT] -- make setup

Prints ``name: value`` lines: wall, CPU, the floor, the load average before and after, and the CPU per
program (``java``, ``python:<module or script>``, ``uv`` ...). Exits with the command's exit code. A
process that starts and ends between two samples is missed (its CPU is then not counted).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: str) -> tuple[int, float] | None:
    """(parent pid, user + system CPU seconds) of a process, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / TICK


def _label(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return "?"
    if not argv:
        return "?"
    program = os.path.basename(argv[0])
    if program.startswith("python"):
        for flag, value in zip(argv[1:], argv[2:]):
            if flag in ("-m", "-c"):
                return "python:" + (value if flag == "-m" else "-c")
            if not flag.startswith("-"):
                return "python:" + os.path.basename(flag)
        return "python"
    return program


def _words(pid: int) -> str:
    """The command line's first words (a timeline tells processes of one program apart by them)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return " ".join(a.decode(errors="replace") for a in f.read().split(b"\0")[:6] if a)[:200]
    except OSError:
        return "?"


def sample(root: int, seen: dict[int, dict]) -> None:
    """Update ``seen`` (pid -> label and last CPU seconds) with ``root`` and its descendants now."""
    stats = {int(p): s for p in os.listdir("/proc") if p.isdigit() and (s := _stat(p)) is not None}
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in stats.items():
        children.setdefault(parent, []).append(pid)
    todo = [root]
    while todo:
        pid = todo.pop()
        if pid in stats:
            entry = seen.setdefault(pid, {"label": None, "cpu": 0.0})
            entry["cpu"] = stats[pid][1]
            if entry["label"] in (None, "bash", "sh", "env", "?"):  # spark-submit's bash (or env) becomes java by exec
                entry["label"] = _label(pid)
                entry["argv"] = _words(pid)
        todo += children.get(pid, [])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--" not in argv:  # `make bench` runs every script bare: nothing to measure
        print("usage: cpu_tree.py [--json OUT] -- CMD ...", file=sys.stderr)
        return 0
    cut = argv.index("--")
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", help="also write the per-process figures here")
    parser.add_argument("--timeline", help="also write every sample here, one JSON line each: the epoch time and "
                        "each live process's [label, CPU seconds, command line's first words]; attributes CPU to "
                        "phases by time")
    args = parser.parse_args(argv[:cut])
    command = argv[cut + 1:]
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    process = subprocess.Popen(command)
    seen: dict[int, dict] = {}
    timeline = open(args.timeline, "w") if args.timeline else None
    while process.poll() is None:
        sample(process.pid, seen)
        if timeline:
            timeline.write(json.dumps({"t": time.time(), "procs": {pid: [e["label"], e["cpu"], e.get("argv")]
                                                                   for pid, e in seen.items()}}) + "\n")
        time.sleep(0.5)
    if timeline:
        timeline.close()
    wall = time.perf_counter() - started
    by_program: dict[str, float] = {}
    for entry in seen.values():
        by_program[entry["label"] or "?"] = by_program.get(entry["label"] or "?", 0.0) + entry["cpu"]
    cpu = sum(by_program.values())
    print(f"wall_seconds: {wall:.1f}\ncpu_seconds: {cpu:.1f}\ntwo_core_floor_seconds: {cpu / 2:.1f}\n"
          f"load_before: {load_before:.2f}\nload_after: {os.getloadavg()[0]:.2f}")
    for label, seconds in sorted(by_program.items(), key=lambda kv: -kv[1]):
        if seconds >= 0.5:
            print(f"cpu_seconds_{label}: {seconds:.1f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"command": command, "wall": wall, "cpu": cpu, "by_program": by_program,
                       "exit_code": process.returncode}, f, indent=1)
    return process.returncode


if __name__ == "__main__":
    raise SystemExit(main())
