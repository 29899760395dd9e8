"""Shared fixtures: one local SparkSession for the whole run, a fresh lakehouse per test."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

TEST_SPARK_CONF = {
    "spark.driver.maxResultSize": "8m",  # stages must not collect row-proportional data
    "spark.sql.shuffle.partitions": "2",
    "spark.ui.enabled": "false",
    "spark.default.parallelism": "2",
}
# Spark's Python workers run torch and BLAS on one thread, as the test process does (one_torch_thread): on two busy
# cores a second, spinning thread costs CPU and gains nothing (docs/development.md, "Session 23 cuts")
TEST_SPARK_CONF.update({f"spark.executorEnv.{name}": "1"
                        for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")})


def make_settings(root, **sections):
    from jvm_archive import java_options, spark_archive

    from privtext.settings import load_settings

    # a test that starts the process's session through these settings (not the `spark` fixture) gives its JVM the
    # fixture's options: which file starts it first decides them for the whole process
    java = {"spark.driver.extraJavaOptions": java_options(spark_archive())}
    overrides = {
        "spark": {"master": "local[2]", "conf": {**TEST_SPARK_CONF, **java}},
        "lakehouse": {"root": str(root)},
        "publish": {"export_path": str(Path(root).parent / "exports"),  # never the project's exports/ or reports
                    "report_path": str(Path(root).parent / "reports")},
        "run": {"deterministic": True, "seed": 1},
        "tracking": {"enabled": False},
        # never the project's cache/detector (a `make demo` trains the NER there): the tests' stages detect with
        # the rule ensemble, as on a clean clone, unless a test trains a detector into a folder of its own
        "pii": {"detector": {"cache_dir": str(Path(root).parent / "no-trained-detector")}},
    }
    for key, value in sections.items():
        overrides[key] = {**overrides.get(key, {}), **value}
    return load_settings(None, overrides=overrides, environ={})


# Under pytest-xdist (`make test`: -n 2 --dist loadfile, each file on one worker) the files that take longest go
# first, so that no long file starts last while the other worker idles (seconds: the per-test junit times of the
# idle clean-clone suite of 458ee24, 2026-11-28; test_cluster, test_fault_injection, test_forget, test_sanitize,
# test_concurrent_runs, test_readonly_sql and test_spark_scratch scaled by the CPU ratios of their session-22 cuts,
# docs/development.md; every other file after these, in collection order). Without xdist the order is pytest's.
SLOW_FILES = {
    "integration/test_fault_injection.py": 300, "integration/test_cluster.py": 320,
    "integration/test_synthesize.py": 215, "integration/test_audit.py": 122, "integration/test_ingest.py": 118,
    "integration/test_forget.py": 93, "integration/test_sanitize.py": 61, "integration/test_readonly_sql.py": 53,
    "integration/test_publish.py": 59, "integration/test_concurrent_runs.py": 58,
    "unit/generate/test_local_generator.py": 50, "integration/test_readonly_sql_fuzz.py": 50,
    "integration/test_detect_pii.py": 48, "integration/test_train_dped.py": 44, "integration/test_embed.py": 43,
    "integration/test_trained_detector.py": 32, "integration/test_openai_server.py": 29,
    "integration/test_spark_scratch.py": 22,
}


def _slow_first(item) -> int:
    path = item.nodeid.split("::")[0].removeprefix("tests/")
    return -SLOW_FILES.get(path, 0)


def pytest_collection_modifyitems(config, items):
    if hasattr(config, "workerinput"):  # an xdist worker: every worker sorts alike (xdist checks)
        items.sort(key=_slow_first)  # stable: a file's tests keep their order


PROJECT_OUTPUTS = ("lakehouse", "exports", "build/reports")  # what a user's demo wrote: tests leave it alone


def _project_outputs() -> set:
    from privtext.settings import PROJECT_ROOT

    return {(str(p), p.stat().st_mtime_ns, p.stat().st_size)
            for folder in PROJECT_OUTPUTS for p in (PROJECT_ROOT / folder).rglob("*") if p.is_file()}


@pytest.fixture(scope="session", autouse=True)
def project_outputs_untouched():
    """Tests write into temporary folders only: the project's lakehouse/, exports/ and build/reports/ are
    the same after the session as before it."""
    before = _project_outputs()
    yield
    changed = sorted({path for path, *_ in before ^ _project_outputs()})
    assert not changed, f"tests wrote into the project's own outputs: {changed[:5]}"


@pytest.fixture(scope="session", autouse=True)
def one_torch_thread():
    """torch in the test process on one intra-op thread, as the stages run it (``ampl.torch_threads``,
    ``pii.detector.threads``, one per Spark core): the tests share two cores with the session's JVM, its
    Python workers and the background DAG run, and torch's spinning threads on a busy machine made small
    ops ~35x slower (tests/unit/dped/test_dped_student.py: 0.25 s on one thread, 9 s on two). A test
    that wants more sets them and puts them back."""
    import torch

    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    from privtext.platform.spark import get_spark

    # the session's JVM maps Spark's classes from the tests' class-data archive (make_settings' java options), as
    # the subprocess JVMs do
    session = get_spark(make_settings(tmp_path_factory.mktemp("spark-root")))
    yield session
    session.stop()


@pytest.fixture
def settings(tmp_path, spark):
    return make_settings(tmp_path / "lake")


@pytest.fixture
def ctx(settings):
    from privtext.platform.context import RunContext

    return RunContext.create(settings, date="2026-01-15")


@pytest.fixture(scope="session")
def s3_server():
    """One real SeaweedFS S3 store for the session, on free 127.0.0.1 ports, one bucket per zone, data in a
    temporary folder; stopped by PID afterwards. Each store identity's key is in ``store.env(identity)``
    (pipeline, officer, analyst): give it to the processes of that role only."""
    from privtext.platform.local_s3 import seaweedfs

    with seaweedfs() as store:
        yield store


@pytest.fixture
def s3_store(s3_server, request):
    """The session's store with this test's own key prefix (its zones and exports do not meet other tests')."""
    import dataclasses
    import re
    import uuid

    if not s3_server.alive():  # say so at once instead of every request timing out
        pytest.fail(f"the session's SeaweedFS store (pid {s3_server.pid}) is gone; its log ends:\n"
                    f"{s3_server.log_tail()}")
    name = re.sub(r"[^A-Za-z0-9_-]", "-", request.node.name)[:40]
    return dataclasses.replace(s3_server, prefix=f"{name}-{uuid.uuid4().hex[:8]}/")
