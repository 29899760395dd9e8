"""Spark's Python worker daemon with the workers' common imports done once, before it forks them.

Spark starts ``python -m <spark.python.daemon.module> pyspark.worker`` once per executor and forks every Python
worker from it; ``pyspark.daemon`` imports nothing heavy, so each worker imported numpy, pyarrow, pandas and
pyspark's worker (~1.9 CPU s) and pydantic and the platform's config (~0.3 s) itself. This module imports them,
then freezes the collector's view of them (``gc.freeze``: a reused worker runs ``gc.collect()`` after every task,
~50 ms over these modules' objects unfrozen) and runs ``pyspark.daemon``'s manager: the workers inherit them.

Only modules that start no thread at import, or whose threads survive a fork (the jemalloc background threads of
pyarrow and deltalake are re-created by jemalloc's fork handlers; numpy's OpenBLAS pool by OpenBLAS's), are
preloaded; torch and the models stay with the worker that needs them (``privtext.worker_cache``).
``get_spark`` names this module for local masters only, where the executors run this interpreter.
"""
from __future__ import annotations

import gc
import importlib

PRELOAD = (
    "numpy",
    "pyarrow",
    "pandas",
    "pyspark.worker",
    "pyspark.sql.pandas.serializers",
    "pyspark.sql.pandas.types",
    "pydantic",
    "privtext.platform.config",
)


def preload() -> None:
    """Import ``PRELOAD`` and move every object alive into the collector's permanent generation."""
    for name in PRELOAD:
        importlib.import_module(name)
    gc.collect()
    gc.freeze()


if __name__ == "__main__":
    from pyspark import daemon

    preload()
    daemon.manager()
