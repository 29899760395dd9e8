"""Spark's Python daemon with the model libraries imported once, before it forks the workers.

Opt-in: ``spark.python.daemon.module: privtext.platform.spark_daemon`` in ``spark.conf`` (the test suite's
sessions set it). Every Python worker is a fork of the session's daemon, and a worker is dropped after a
minute idle (Spark's fixed ``PythonWorkerFactory`` timeout), so a long session whose stages load the
Presidio analyzer or a transformer re-imports torch, transformers, spaCy and Presidio (~9 CPU s) in every
new worker; imported here they come with the fork, copy-on-write. What a worker builds from them (the
analyzer, an encoder: ``privtext.worker_cache``) is still built in the worker, per its settings.

Not a default: a session whose workers never touch these libraries (``privtext run ingest``) would pay the
imports for nothing. Only libraries that start no thread but BLAS pools are imported (OpenBLAS re-creates
its pool after a fork); pandas and pyarrow, whose imports start threads, stay after the fork as in
``pyspark.daemon`` itself.
"""
import importlib

PRELOAD = ("torch", "transformers", "spacy", "presidio_analyzer")


def preload() -> None:
    for name in PRELOAD:
        importlib.import_module(name)


if __name__ == "__main__":  # Spark runs ``python -m <daemon module> <worker module>``
    from pyspark.daemon import manager

    preload()
    manager()
