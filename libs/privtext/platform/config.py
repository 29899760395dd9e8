"""Typed configuration: ``conf/base.yaml`` + an environment file + ``PRIVTEXT_...`` overrides.

Precedence (later wins): base.yaml < environment file (``conf/local.yaml`` by default) <
environment variables ``PRIVTEXT_<SECTION>__<KEY>[__<KEY>...]=<yaml value>``, e.g.
``PRIVTEXT_SPARK__MASTER=spark://host:7077`` or ``PRIVTEXT_RUN__DETERMINISTIC=true``.

Every section forbids unknown keys, so a typo fails at start with the key's dotted path and the
keys (or values) that are allowed there.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field, ValidationError

from privtext.ampl.settings import AmplSettings
from privtext.clusant.settings import ClusantSettings
from privtext.dped.settings import DpedSettings
from privtext.embed.settings import EmbedSettings
from privtext.generate.settings import GenerateSettings
from privtext.pii.settings import PiiSettings
from privtext.secpe.settings import SecpeSettings
from privtext.platform.strict import StrictModel

# PRIVTEXT_HOME: the project checkout, for code imported from a zip/wheel shipped with spark-submit --py-files
PROJECT_ROOT = Path(os.environ.get("PRIVTEXT_HOME") or Path(__file__).resolve().parents[3])
ENV_PREFIX = "PRIVTEXT_"
ZONES = ("restricted", "protected", "published")


class ConfigError(ValueError):
    """A configuration problem, naming the dotted key and what is allowed."""


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


class LakehouseSettings(StrictModel):
    root: str = "lakehouse"  # relative paths are resolved against the project root
    zone_roots: dict[Literal["restricted", "protected", "published"], str] = Field(default_factory=dict)
    max_file_rows: int = Field(500_000, gt=0)
    max_file_bytes: int = Field(128 * 1024 * 1024, gt=0)
    commit_retries: int = Field(5, ge=0)
    lock_dir: str | None = None  # stage leases; default <root>/_locks (required for an object-store root)
    lease_seconds: float = Field(600, gt=0, allow_inf_nan=False)  # renewed every third while the stage runs
    vacuum_retention_hours: int = Field(168, ge=0)  # privtext vacuum: removed files kept this long (time travel)

    def zone_root(self, zone: str) -> str:
        if zone not in ZONES:
            raise ConfigError(f"unknown zone {zone!r}; allowed: {', '.join(ZONES)}")
        return resolve_uri(self.zone_roots.get(zone) or f"{self.root.rstrip('/')}/{zone}")


class TrackingSettings(StrictModel):
    enabled: bool = True
    tracking_uri: str | None = None  # default: sqlite:///<lakehouse root>/mlflow.db
    artifact_root: str | None = None  # default: <lakehouse root>/mlruns
    experiment: str = "privtext"


class IngestSettings(StrictModel):
    max_chars: int = Field(20_000, gt=0)
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
    formats: tuple[Literal["parquet", "jsonl"], ...] = ("parquet", "jsonl")
    require_audit: bool = True  # false only for demos: publish without an audit (recorded in the ledger)
    audit_adversaries: tuple[str, ...] = ("transformer", "lstm", "rnn")  # each must have passed for the date
    # sanitized exports: the date's measured canary span recall (detect_pii) must reach this; 0 disables
    min_canary_recall: float = Field(0.9, ge=0.0, le=1.0)


class SqlSettings(StrictModel):
    """``privtext sql``: always read-only; ``analyst`` reads the published zone, ``operator`` every zone."""

    role: Literal["analyst", "operator"] = "analyst"


class PrivacySettings(StrictModel):
    budgets: dict[str, DatasetBudget] = Field(default_factory=dict)


class Settings(StrictModel):
    run: RunSettings = RunSettings()
    spark: SparkSettings = SparkSettings()
    lakehouse: LakehouseSettings = LakehouseSettings()
    tracking: TrackingSettings = TrackingSettings()
    ingest: IngestSettings = IngestSettings()
    privacy: PrivacySettings = PrivacySettings()
    pii: PiiSettings = PiiSettings()
    embed: EmbedSettings = EmbedSettings()
    generate: GenerateSettings = GenerateSettings()
    clusant: ClusantSettings = ClusantSettings()
    ampl: AmplSettings = AmplSettings()
    dped: DpedSettings = DpedSettings()
    secpe: SecpeSettings = SecpeSettings()
    publish: PublishSettings = PublishSettings()
    sql: SqlSettings = SqlSettings()

    def budget(self, dataset: str) -> DatasetBudget:
        """The dataset's budget; a dataset without one is refused (fail closed)."""
        if dataset not in self.privacy.budgets:
            known = ", ".join(sorted(self.privacy.budgets)) or "none"
            raise ConfigError(f"dataset {dataset!r} has no privacy budget: add privacy.budgets.{dataset} "
                              f"(r_over_p_max, eps_max, delta_max, mldp_eps_max) to the config; budgets defined: {known}")
        return self.privacy.budgets[dataset]


def resolve_uri(path_or_uri: str) -> str:
    """Object-store URIs pass through; local paths become absolute (relative to the project)."""
    if "://" in path_or_uri:
        return path_or_uri.rstrip("/")
    path = Path(path_or_uri)
    return str(path if path.is_absolute() else (PROJECT_ROOT / path).resolve())


def _deep_merge(base: dict, override: dict) -> dict:
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _read_yaml(path: Path) -> dict:
    if not path.exists():
        raise ConfigError(f"config file not found: {path}")
    data = yaml.safe_load(path.read_text()) or {}
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a mapping at the top level")
    return data


def _env_overrides(environ: dict[str, str]) -> dict:
    overrides: dict[str, Any] = {}
    for name, raw in environ.items():
        if not name.startswith(ENV_PREFIX) or "__" not in name:
            continue
        keys = [k.lower() for k in name[len(ENV_PREFIX):].split("__")]
        node = overrides
        for key in keys[:-1]:
            node = node.setdefault(key, {})
        node[keys[-1]] = yaml.safe_load(raw)
    return overrides


def _model_at(path: tuple) -> type[BaseModel] | None:
    model: Any = Settings
    for key in path:
        field = model.model_fields.get(key) if isinstance(model, type) and issubclass(model, BaseModel) else None
        if field is None:
            return None
        model = field.annotation
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


def _explain(error: ValidationError) -> str:
    lines = []
    for item in error.errors():
        loc = tuple(str(p) for p in item["loc"])
        dotted = ".".join(loc)
        if item["type"] == "extra_forbidden":
            parent = _model_at(loc[:-1])
            allowed = ", ".join(parent.model_fields) if parent else "see conf/base.yaml"
            lines.append(f"unknown config key '{dotted}'; allowed keys here: {allowed}")
        else:
            lines.append(f"bad value for config key '{dotted}': {item['msg']}")
    return "invalid configuration:\n  " + "\n  ".join(lines)


def load_settings(
    env_file: str | Path | None = "conf/local.yaml",
    overrides: dict | None = None,
    environ: dict[str, str] | None = None,
) -> Settings:
    """Load base.yaml, the environment file, ``PRIVTEXT_`` variables and explicit overrides."""
    data = _read_yaml(PROJECT_ROOT / "conf" / "base.yaml")
    if env_file is not None:
        env_path = Path(env_file)
        data = _deep_merge(data, _read_yaml(env_path if env_path.is_absolute() else PROJECT_ROOT / env_path))
    data = _deep_merge(data, _env_overrides(dict(os.environ if environ is None else environ)))
    data = _deep_merge(data, overrides or {})
    try:
        return Settings.model_validate(data)
    except ValidationError as error:
        raise ConfigError(_explain(error)) from None
