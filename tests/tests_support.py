"""Helpers shared by tests (importable because pytest runs with the tests folder on sys.path)."""


def make_budget_settings(root, deterministic: bool = False, **limits):
    """Settings with a tight, known budget for dataset 'reviews' (ledger tests)."""
    from privtext.settings import load_settings

    budget = {"r_over_p_max": 10.0, "eps_max": 2.0, "delta_max": 1e-5, "mldp_eps_max": 20.0, **limits}
    return load_settings(None, environ={}, overrides={
        "lakehouse": {"root": str(root)}, "tracking": {"enabled": False}, "run": {"deterministic": deterministic},
        "privacy": {"budgets": {"reviews": budget}},
    })

def rules_only(**fields):
    """``PiiSettings(**fields)`` without the trained NER: the rule, gazetteer and spaCy ensemble the PII unit tests
    specify, whatever ``make demo`` left in the project's cache/detector (the trained NER's tests train their own
    into a folder of their own: tests/integration/test_trained_detector.py, tests/unit/pii/test_pii_tagger.py)."""
    from privtext.pii.settings import PiiSettings

    recognizers = {**fields.pop("recognizers", {}), "trained_ner": False}
    return PiiSettings(**fields, recognizers=recognizers)


def write_rows(ctx, spec, rows: list[dict], partition_values: dict | None = None):
    """Write literal rows into a table (replacing the partitions given) — input fixtures for stage tests
    (published tables through the publisher handle, as only publish has it in the product)."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import from_arrow_schema

    frame = ctx.spark.createDataFrame(pa.Table.from_pylist(rows, schema=spec.schema),
                                      schema=from_arrow_schema(spec.schema))
    lakehouse = ctx.lakehouse.as_publisher() if spec.zone == "published" else ctx.lakehouse
    if partition_values is None:
        return lakehouse.append(spec, frame)
    return lakehouse.replace_partitions(spec, frame, partition_values)


def document(doc_id: str, text: str, date, user_id: str | None = None, label: str | None = None) -> dict:
    """A ``restricted.documents`` row."""
    import datetime as dt

    return {"doc_id": doc_id, "user_id": user_id, "text": text, "label": label, "metadata": [],
            "ingest_date": dt.date.fromisoformat(str(date)), "run_id": "fixture"}


HOLD_LEASE = """
import sys, time
from privtext.settings import load_settings
from privtext.platform.leases import acquire
settings = load_settings(None, overrides={"lakehouse": {"root": sys.argv[1]}}, environ={})
try:
    lease = acquire(settings.lakehouse, sys.argv[2], "run-" + sys.argv[3])
except Exception as error:
    print("refused", type(error).__name__, flush=True)
    sys.exit(3)
print("held", flush=True)
time.sleep(120)
"""


def hold_lease(root, name: str, tag: str = "a"):
    """A separate process that takes the stage lease ``name`` under lakehouse ``root`` and holds it
    (its first output line is ``held``) or prints ``refused`` and exits."""
    import os
    import subprocess
    import sys

    return subprocess.Popen([sys.executable, "-c", HOLD_LEASE, str(root), name, tag], stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})


class LlamaServer:
    """llama.cpp's own OpenAI-compatible server (the C++ ``llama-server`` engine of the prebuilt ``xllamacpp``
    wheel) serving the bundled SmolLM2 GGUF on a free 127.0.0.1 port, one thread, in a child process:
    ``start()`` waits until it answers, ``kill()`` ends it by its PID (SIGKILL, as a crash), ``start()``
    again brings it back on the same port; ``answered()`` counts the completions its log records. A
    context manager stops it."""

    SCRIPT = ("import sys, threading, xllamacpp\n"
              "p = xllamacpp.CommonParams()\n"
              "p.model.path, p.port, p.hostnames = sys.argv[1], int(sys.argv[2]), ['127.0.0.1']\n"
              "p.n_ctx, p.n_parallel, p.ui = 1536, 3, False  # 512 tokens per slot\n"
              "p.cpuparams.n_threads = p.cpuparams_batch.n_threads = 1\n"
              "server = xllamacpp.Server(p)\n"
              "threading.Event().wait()\n")

    def __init__(self, log_path):
        import socket

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.log_path = log_path
        self.process = None

    def start(self, timeout_s: float = 60.0) -> "LlamaServer":
        import subprocess
        import sys
        import time

        import httpx

        from privtext.generate.local import resolve_model_path

        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-c", self.SCRIPT, str(resolve_model_path("smollm2")), str(self.port)],
                stdout=log, stderr=log)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"llama.cpp server exited with {self.process.returncode}: see {self.log_path}")
            try:
                if httpx.get(f"{self.base_url}/models", timeout=1.0).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        self.kill()
        raise RuntimeError(f"llama.cpp server did not answer within {timeout_s:.0f} s: see {self.log_path}")

    def answered(self) -> int:
        """Completions finished so far (llama.cpp logs one slot release per completion)."""
        return self.log_path.read_bytes().count(b"stop processing")

    def kill(self) -> None:
        import os
        import signal

        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def __enter__(self) -> "LlamaServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.kill()
