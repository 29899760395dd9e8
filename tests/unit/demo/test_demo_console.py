"""The demo's console: everything but the stage lines goes to the log file, also from child processes."""
import io
import subprocess
import sys
import textwrap

import pytest

from privtext.demo import StageLines
from privtext.privacy.budget import BudgetExceeded
from privtext.stages.publish import PublishRefused

NOISY = textwrap.dedent("""
    import logging, subprocess, sys, warnings
    from pathlib import Path
    from privtext.demo import quiet

    print("before")
    with quiet(Path(sys.argv[1])) as terminal:
        print("python stdout noise")
        print("python stderr noise", file=sys.stderr)
        warnings.warn("a library warning")
        logging.getLogger("py4j").info("a library log line")
        subprocess.run(["sh", "-c", "echo WARN jvm noise >&2; echo jvm stdout noise"])  # inherits fds, like the JVM
        terminal.write("  ingest   1.0 s  done\\n")
    print("after")
""")


def test_quiet_sends_python_library_and_child_output_to_the_log(tmp_path):
    log = tmp_path / "logs" / "demo.log"
    run = subprocess.run([sys.executable, "-c", NOISY, str(log)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout == "before\n  ingest   1.0 s  done\nafter\n"
    assert run.stderr == ""
    written = log.read_text()
    for noise in ("python stdout noise", "python stderr noise", "a library warning", "a library log line",
                  "WARN jvm noise", "jvm stdout noise"):
        assert noise in written


def test_stage_lines_show_time_and_outcome():
    out = io.StringIO()
    lines = StageLines(out)
    with lines("ingest"):
        pass
    with pytest.raises(PublishRefused):
        with lines("publish"):
            raise PublishRefused("no", ["audit failed"])
    with pytest.raises(BudgetExceeded):
        with lines("sanitize"):
            raise BudgetExceeded("over")
    with pytest.raises(ValueError):
        with lines("embed"):
            raise ValueError("boom")
    assert out.getvalue().split("\n") == [
        "\r  ingest           0.0 s  done", "\r  publish          0.0 s  refused by the gate",
        "\r  sanitize         0.0 s  refused: over budget", "\r  embed            0.0 s  failed (ValueError)", ""]
