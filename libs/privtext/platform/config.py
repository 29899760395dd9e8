"""The platform's and the stages' configuration sections (run, spark, lakehouse, tracking, ingest,
privacy budgets, publish), the project root and ``resolve_uri``. The root ``Settings``, which adds each
algorithm's own section, and its loading live above the platform, in ``privtext.settings``."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import Field

from privtext.errors import PrivtextError
from privtext.strict import StrictModel

# PRIVTEXT_HOME: the project checkout, for code imported from a zip/wheel shipped with spark-submit --py-files
PROJECT_ROOT = Path(os.environ.get("PRIVTEXT_HOME") or Path(__file__).resolve().parents[3])
ENV_PREFIX = "PRIVTEXT_"
ZONES = ("restricted", "protected", "published")


class ConfigError(PrivtextError, ValueError):
    """A configuration problem, naming the dotted key and what is allowed."""

    exit_code = 2


class RunSettings(StrictModel):
    deterministic: bool = False  # fixed-seed noise: tests and reproducible demos only
    seed: int = 0
    dataset: str = "default"
    hmac_key_env: str = "PRIVTEXT_HMAC_KEY"  # keyed hashing of secret values (pii registry)
    hmac_key_file: str | None = None


class SparkSettings(StrictModel):
    master: str = "local[*]"
    app_name: str = "privtext"
    conf: dict[str, str] = Field(default_factory=dict)
    partitions_per_slot: int = Field(2, ge=1)  # per-document stages run in task slots x this many partitions


class ObjectStoreSettings(StrictModel):
    """An S3-compatible store's location and commit mode. Credentials are never configured here: they come
    from the environment (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, or the host's role), of the driver and
    of every executor."""

    endpoint: str | None = None  # e.g. http://127.0.0.1:8333 (SeaweedFS, MinIO); none: AWS
    region: str | None = None
    allow_http: bool = False
    # conditional_put: a Delta commit writes _delta_log/N.json only if absent (If-None-Match), so concurrent
    # committers conflict instead of overwriting each other; unsafe_rename: no such check (one committer only)
    commit: Literal["conditional_put", "unsafe_rename"] = "conditional_put"


class LakehouseSettings(StrictModel):
    root: str = "lakehouse"  # relative paths are resolved against the project root
    zone_roots: dict[Literal["restricted", "protected", "published"], str] = Field(default_factory=dict)
    object_store: ObjectStoreSettings = Field(default_factory=ObjectStoreSettings)  # for s3:// roots
    zone_object_stores: dict[Literal["restricted", "protected", "published"], ObjectStoreSettings] = Field(
        default_factory=dict)  # per zone, when zones live in different stores
    max_file_rows: int = Field(500_000, gt=0)
    max_file_bytes: int = Field(128 * 1024 * 1024, gt=0)
    commit_retries: int = Field(5, ge=0)
    lock_dir: str | None = None  # stage leases; default <root>/_locks (required for an object-store root)
    lease_seconds: float = Field(600, gt=0, allow_inf_nan=False)  # renewed every third while the stage runs
    vacuum_retention_hours: int = Field(168, ge=0)  # privtext vacuum: removed files kept this long (time travel)
    compact_files: int = Field(16, ge=2)  # a driver-side table (the ledger) with this many files is compacted

    def zone_root(self, zone: str) -> str:
        if zone not in ZONES:
            raise ConfigError(f"unknown zone {zone!r}; allowed: {', '.join(ZONES)}")
        return resolve_uri(self.zone_roots.get(zone) or f"{self.root.rstrip('/')}/{zone}")

    def zone_store(self, zone: str) -> ObjectStoreSettings:
        return self.zone_object_stores.get(zone) or self.object_store


class TrackingSettings(StrictModel):
    enabled: bool = True
    tracking_uri: str | None = None  # default: sqlite:///<lakehouse root>/mlflow.db
    artifact_root: str | None = None  # default: <lakehouse root>/mlruns
    experiment: str = "privtext"


class IngestSettings(StrictModel):
    # longer texts are quarantined; detection windows long documents (pii.max_chunk_chars): a 1 MB mail
    # or digest is a normal document
    max_chars: int = Field(2_000_000, gt=0)
    csv_delimiter: str = ","
    # a rerun of a date with fewer usable documents than this share of what it holds is refused
    min_ratio_of_previous: float = Field(0.5, ge=0.0, le=1.0)


class DatasetBudget(StrictModel):
    """Privacy budget of one dataset; a charge that would exceed any limit is refused. Every limit is
    required and must be a finite number (fail closed: no limit is never the default)."""

    r_over_p_max: float = Field(gt=1, allow_inf_nan=False)  # composed B(p)/p of the worst secret
    eps_max: float = Field(gt=0, allow_inf_nan=False)  # record/user-level eps at delta_max
    delta_max: float = Field(gt=0, lt=1, allow_inf_nan=False)
    mldp_eps_max: float = Field(gt=0, allow_inf_nan=False)  # metric-LDP eps summed per value


class PublishSettings(StrictModel):
    """The ``publish`` stage: export location and the leakage-audit gate."""

    export_path: str = "exports"  # local folder (relative to the project) or an object-store URI
    report_path: str = "build/reports"  # where `privtext report` and the demo write the privacy reports
    formats: tuple[Literal["parquet", "jsonl"], ...] = ("parquet", "jsonl")
    require_audit: bool = True  # false only for demos: publish without an audit (recorded in the ledger)
    audit_adversaries: tuple[str, ...] = ("transformer", "lstm", "rnn")  # each must have passed for the date
    # sanitized exports: the date's measured canary span recall (detect_pii) must reach this; 0 disables
    min_canary_recall: float = Field(0.9, ge=0.0, le=1.0)
    # sanitized exports: draws equal to their input (the staged ``verbatim`` count) beyond this share of the
    # replacements refuse the date unless the mechanism's own probability of drawing the input explains them
    # (Chernoff tail >= verbatim_significance)
    max_verbatim_share: float = Field(0.0, ge=0.0, le=1.0)
    verbatim_significance: float = Field(1e-6, gt=0.0, lt=1.0)


class SqlSettings(StrictModel):
    """``privtext sql``: always read-only; ``analyst`` reads the published zone, ``officer`` protected and
    published, ``operator`` every zone (on object storage each with its store identity's key)."""

    role: Literal["analyst", "officer", "operator"] = "analyst"
    max_rows: int = Field(10_000, ge=1, le=1_000_000)  # rows one statement may return (--limit may ask for fewer)
    timeout_s: float = Field(120.0, gt=0, le=3600)  # a statement still running after this is cancelled (exit 3)


class RetentionSettings(StrictModel):
    """Raw-text retention (``privtext retention run``)."""

    # restricted data dates (documents, quarantine, spans, embeddings, staged sanitized documents) older than
    # this many days are erased, their files purged; null (the default): kept until `privtext forget`
    restricted_days: int | None = Field(None, ge=0)


class PrivacySettings(StrictModel):
    budgets: dict[str, DatasetBudget] = Field(default_factory=dict)


def resolve_uri(path_or_uri: str) -> str:
    """Object-store URIs pass through; local paths become absolute (relative to the project)."""
    if "://" in path_or_uri:
        return path_or_uri.rstrip("/")
    path = Path(path_or_uri)
    return str(path if path.is_absolute() else (PROJECT_ROOT / path).resolve())
