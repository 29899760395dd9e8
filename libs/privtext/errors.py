"""The errors privtext raises on purpose. Each carries a message that says what went wrong and how to
proceed (never private text) and the CLI's exit code; the CLI prints ``privtext: <message>`` as one
line and exits with it, no traceback. A leaf: every layer may raise them.

Exit codes of the ``privtext`` CLI: 0 done; 1 a failure privtext names (``PrivtextError``: a missing
HMAC key, a failed table operation or query); 2 a usage or configuration mistake (``UsageError``,
``ConfigError``: broken YAML, an unknown key, a bad ``--date``, an unknown stage or pipeline; argparse's
own usage errors too); 3 refused by a guard (``Refused``: a lease held, a gate, a budget, a statement
that is not a read).
"""
import sys


class PrivtextError(Exception):
    """A failure privtext names itself (bad config, a refused or failed table operation, a missing key...)."""

    exit_code = 1


class UsageError(PrivtextError, ValueError):
    """A command-line mistake: a malformed option value, an unknown stage or pipeline."""

    exit_code = 2


class Refused(PrivtextError, RuntimeError):
    """An operation refused by a guard (lease held, load too small, statement not read-only, gate, budget)."""

    exit_code = 3


def report_error(error: PrivtextError) -> int:
    """One line on stderr (``privtext: [refused: ]<message>``), no traceback; returns the exit code."""
    print(f"privtext: {'refused: ' if isinstance(error, Refused) else ''}{error}", file=sys.stderr)
    return error.exit_code
