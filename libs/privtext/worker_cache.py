"""One instance per Python process and key: models built once per Spark Python worker, then reused."""
from __future__ import annotations

import threading
from typing import Callable, Hashable, TypeVar

T = TypeVar("T")

_INSTANCES: dict[Hashable, object] = {}
_LOCK = threading.Lock()


def per_process(key: Hashable, build: Callable[[], T]) -> T:
    """The process's instance for ``key``, built by ``build()`` on first use (thread-safe)."""
    with _LOCK:
        if key not in _INSTANCES:
            _INSTANCES[key] = build()
        return _INSTANCES[key]
