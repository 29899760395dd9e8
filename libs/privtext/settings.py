"""Typed configuration: ``conf/base.yaml`` + an environment file + ``PRIVTEXT_...`` overrides.

Precedence (later wins): base.yaml < environment file (``conf/local.yaml`` by default) <
environment variables ``PRIVTEXT_<SECTION>__<KEY>[__<KEY>...]=<yaml value>``, e.g.
``PRIVTEXT_SPARK__MASTER=spark://host:7077`` or ``PRIVTEXT_RUN__DETERMINISTIC=true``.

Every section forbids unknown keys, so a typo fails at start with the key's dotted path and the
keys (or values) that are allowed there. This module sits above the platform and the algorithms:
each of them owns only its own section (``platform.config``, ``<algorithm>/settings.py``).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from privtext.ampl.settings import AmplSettings
from privtext.clusant.settings import ClusantSettings
from privtext.dped.settings import DpedSettings
from privtext.embed.settings import EmbedSettings
from privtext.generate.settings import GenerateSettings
from privtext.pii.settings import PiiSettings
from privtext.platform.config import (  # noqa: F401  re-exported: the one place commands and stages import from
    ENV_PREFIX,
    PROJECT_ROOT,
    ZONES,
    ConfigError,
    DatasetBudget,
    IngestSettings,
    LakehouseSettings,
    PrivacySettings,
    PublishSettings,
    RetentionSettings,
    RunSettings,
    SparkSettings,
    SqlSettings,
    TrackingSettings,
    resolve_uri,
)
from privtext.secpe.settings import SecpeSettings
from privtext.strict import StrictModel


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
    retention: RetentionSettings = RetentionSettings()

    def budget(self, dataset: str) -> DatasetBudget:
        """The dataset's budget; a dataset without one is refused (fail closed)."""
        if dataset not in self.privacy.budgets:
            known = ", ".join(sorted(self.privacy.budgets)) or "none"
            raise ConfigError(f"dataset {dataset!r} has no privacy budget: add privacy.budgets.{dataset} "
                              "(r_over_p_max, eps_max, delta_max, mldp_eps_max) to the config; "
                              f"budgets defined: {known}")
        return self.privacy.budgets[dataset]


OFFLINE_MODELS = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
LOG_FORMAT = "%(levelname)s %(name)s: %(message)s"  # of every entry point


def use_offline_models(environ=os.environ) -> None:
    """Hugging Face libraries load models from the local cache only (the project never downloads one at
    run time): sets ``OFFLINE_MODELS`` in ``environ`` where the caller's environment does not say otherwise.
    Called once by each entry point (``privtext``, ``jobs/<stage>.py``)."""
    for name, value in OFFLINE_MODELS.items():
        environ.setdefault(name, value)


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
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise ConfigError(f"config file {path} is not valid YAML: {getattr(error, 'problem', None) or 'parse error'}"
                          f"{where}") from None
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
        try:
            node[keys[-1]] = yaml.safe_load(raw)
        except yaml.YAMLError:
            raise ConfigError(f"environment variable {name} is not a valid YAML value") from None
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
        settings = Settings.model_validate(data)
    except ValidationError as error:
        raise ConfigError(_explain(error)) from None
    settings.budget(settings.run.dataset)  # a run.dataset without a budget fails at start (fail closed)
    return _with_project_paths(settings)


def _with_project_paths(settings: Settings) -> Settings:
    """The trained detector's data and cache paths made absolute (relative to the project), so Spark's
    Python workers, whatever their working directory, find the same weights."""
    detector = settings.pii.detector
    resolved = detector.model_copy(update={"cache_dir": resolve_uri(detector.cache_dir),
                                           "train_data": detector.train_data
                                           if detector.train_data.startswith("package:")
                                           else resolve_uri(detector.train_data)})
    return settings.model_copy(update={"pii": settings.pii.model_copy(update={"detector": resolved})})
