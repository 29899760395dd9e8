"""Refusals: a guard stopped an operation on purpose; the message says why and how to proceed. The CLI
prints it as one line and exits 3 (no traceback)."""


class Refused(RuntimeError):
    """An operation refused by a guard (lease held, load too small, statement not read-only, gate)."""
