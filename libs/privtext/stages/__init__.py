"""The stage registry: for every stage, what it reads, writes, keys on and gates on (``STAGES``), and the
targets ``audit`` and ``publish`` run for (``TARGETS``: each a release with its staged and published table).

A stage is the module ``privtext.stages.<name>``: ``run(ctx, **options) -> dataclass`` and, when it takes
options, ``add_arguments(parser)`` declaring them (``stages/runner.py`` dispatches). Its entry here is
its contract; ``tests/unit/stages/test_registry.py`` checks it against the module.
"""
from __future__ import annotations

from dataclasses import dataclass

from privtext.platform.table_spec import TableSpec
from privtext.platform.tables import (
    DOC_EMBEDDINGS,
    DOCUMENTS,
    ERASURES,
    GENERATOR_SAMPLES,
    LEAKAGE_AUDITS,
    NOISY_CENTERS,
    PII_SPANS,
    PRIVACY_LEDGER,
    PUBLISHED_SANITIZED_DOCUMENTS,
    PUBLISHED_SYNTHETIC_DOCUMENTS,
    QUARANTINE,
    STAGED_SANITIZED_DOCUMENTS,
    STAGED_SYNTHETIC_DOCUMENTS,
    STAGED_WORD_VECTORS,
    UTILITY_REPORTS,
    WORD_VECTORS,
)

LEAKAGE_AUDIT = "leakage_audit"
LEDGER_CHARGE = "ledger_charge"


@dataclass(frozen=True)
class Target:
    """A release the platform publishes, named by ``--target``.

    :param staged: the restricted table a stage stages it in
    :param published: the published table ``publish`` replaces the date's partition (or model versions) of
    :param gate: what lets ``publish`` release it: ``LEAKAGE_AUDIT`` (a passed audit of the staged rows,
        ``publish.gate_decision``) or ``LEDGER_CHARGE`` (a ledger charge with a DP guarantee of the staging
        run: synthetic documents and DPED word vectors carry their own (p,r)/DP guarantee)
    :param pseudonymised: its published ``doc_id``s are keyed pseudonyms of the staged ones (HMAC key)
    """

    staged: TableSpec
    published: TableSpec
    gate: str
    pseudonymised: bool = False

    @property
    def audit_gated(self) -> bool:
        """Whether the leakage audit gates this target (``audit`` runs for it)."""
        return self.gate == LEAKAGE_AUDIT


TARGETS = {
    "sanitized_documents": Target(STAGED_SANITIZED_DOCUMENTS, PUBLISHED_SANITIZED_DOCUMENTS, LEAKAGE_AUDIT,
                                  pseudonymised=True),
    "synthetic_documents": Target(STAGED_SYNTHETIC_DOCUMENTS, PUBLISHED_SYNTHETIC_DOCUMENTS, LEDGER_CHARGE),
    "word_vectors": Target(STAGED_WORD_VECTORS, WORD_VECTORS, LEDGER_CHARGE),
}
DEFAULT_TARGET = "sanitized_documents"


@dataclass(frozen=True)
class Stage:
    """One stage's contract.

    :param name: the module ``privtext.stages.<name>``, ``privtext run <name>``, ``jobs/<name>.py``
    :param reads: the tables it reads (the ledger included where it reads charges)
    :param writes: the tables it writes (the ledger included where it charges)
    :param keyed: it needs the HMAC key (``run.hmac_key_env`` / ``run.hmac_key_file``) on every run: it keys
        the records it reads
    :param gates: what refuses a run (``privtext.errors.Refused``; nothing written), in words
    :param targets: the ``--target`` values it takes (empty: no ``--target``)
    :param pseudonymises: it writes the keyed pseudonyms of a ``Target.pseudonymised`` target (HMAC key)
    """

    name: str
    reads: tuple[TableSpec, ...]
    writes: tuple[TableSpec, ...]
    keyed: bool
    gates: str
    targets: tuple[str, ...] = ()
    pseudonymises: bool = False

    def needs_key(self, target: str = DEFAULT_TARGET) -> bool:
        """Whether a run for ``target`` needs the HMAC key (a missing key stops the run before Spark starts)."""
        return self.keyed or self.pseudonymises and target in TARGETS and TARGETS[target].pseudonymised


_STAGED = tuple(t.staged for t in TARGETS.values())
_PUBLISHED = tuple(t.published for t in TARGETS.values())
STAGES = {stage.name: stage for stage in (
    Stage("ingest", (DOCUMENTS, ERASURES), (DOCUMENTS, QUARANTINE), keyed=True,
          gates="a load without usable documents, or much smaller than the date's last (IngestError)"),
    Stage("detect_pii", (DOCUMENTS,), (PII_SPANS, PRIVACY_LEDGER), keyed=True, gates="nothing"),
    Stage("embed", (DOCUMENTS, DOC_EMBEDDINGS), (DOC_EMBEDDINGS,), keyed=False, gates="nothing"),
    Stage("sanitize", (DOCUMENTS, PII_SPANS, PRIVACY_LEDGER),
          (STAGED_SANITIZED_DOCUMENTS, UTILITY_REPORTS, PRIVACY_LEDGER), keyed=False,
          gates="the budget (privacy.budget: BudgetExceeded before anything is written)"),
    Stage("audit", (STAGED_SANITIZED_DOCUMENTS, DOCUMENTS, PII_SPANS), (LEAKAGE_AUDITS,), keyed=False,
          gates="nothing (a night too small to audit is refused: Unauditable, exit 3)",
          targets=tuple(name for name, target in TARGETS.items() if target.audit_gated)),
    Stage("publish", (*_STAGED, LEAKAGE_AUDITS, PRIVACY_LEDGER), (*_PUBLISHED, PRIVACY_LEDGER), keyed=False,
          gates="the target's gate (Target.gate; PublishRefused)", targets=tuple(TARGETS), pseudonymises=True),
    Stage("synthesize", (DOC_EMBEDDINGS, DOCUMENTS, PII_SPANS, PRIVACY_LEDGER),
          (NOISY_CENTERS, GENERATOR_SAMPLES, STAGED_SYNTHETIC_DOCUMENTS, UTILITY_REPORTS, PRIVACY_LEDGER),
          keyed=True, gates="the budget (BudgetExceeded before any private statistic is computed)"),
    Stage("evaluate", (STAGED_SYNTHETIC_DOCUMENTS, DOC_EMBEDDINGS, DOCUMENTS, GENERATOR_SAMPLES, PII_SPANS),
          (UTILITY_REPORTS,), keyed=False, gates="nothing"),
    Stage("train_dped", (DOCUMENTS, PRIVACY_LEDGER), (STAGED_WORD_VECTORS, PRIVACY_LEDGER), keyed=True,
          gates="noise-dominated answers (NoiseDominated, nothing charged), the budget (BudgetExceeded), an "
                "empty DP vocabulary (EmptyVocabulary, the charge stands)"),
)}
