"""Gaussian-DP and approximate-DP accounting on top of ``dp-accounting``.

Every mechanism a stage runs is recorded as a ``dp_accounting.DpEvent`` (the ledger stores it as
JSON through ``event_to_json`` and re-accounts it later with ``event_from_json``); privacy loss
distributions (PLD, pessimistic discretization: the reported epsilon/delta are upper bounds) compose
the events, Renyi DP (RDP) is available as a cross-check (looser, also an upper bound).

Adjacency is the caller's: dp-accounting's default ``ADD_OR_REMOVE_ONE`` relation is used, and a
``GaussianDpEvent(noise_multiplier=z)`` means a Gaussian mechanism whose L2 sensitivity under that
relation is 1 and whose noise standard deviation is z (so z = sigma / sensitivity).

mu-GDP (Dong, Roth & Su 2019): the Gaussian mechanism with sensitivity Delta and noise sigma is
(Delta/sigma)-GDP; T releases compose to sqrt(T) Delta/sigma-GDP (exact; ``augpe_sigma``).
"""
from __future__ import annotations

import json
import math

import attr
import dp_accounting
from dp_accounting import dp_event as dpe
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.rdp import rdp_privacy_accountant

from privtext.privacy.secret_protection import mu_from_pr

__all__ = [
    "augpe_sigma",
    "epsilon_of",
    "event_from_json",
    "event_to_json",
    "gaussian_event",
]

_PLD_DISCRETIZATION = 1e-4


def _accountant(kind: str) -> dp_accounting.PrivacyAccountant:
    if kind == "pld":
        return pld_privacy_accountant.PLDAccountant(value_discretization_interval=_PLD_DISCRETIZATION)
    if kind == "rdp":
        return rdp_privacy_accountant.RdpAccountant()
    raise ValueError(f"accountant must be 'pld' or 'rdp', got {kind!r}")


# ---------------------------------------------------------------------------------------------
# DpEvent <-> JSON (the ledger's storage format)
# ---------------------------------------------------------------------------------------------

def _event_to_obj(event: dpe.DpEvent) -> dict:
    if not isinstance(event, dpe.DpEvent):
        raise TypeError(f"not a DpEvent: {type(event).__name__}")
    obj: dict = {"type": type(event).__name__}
    for field in attr.fields(type(event)):
        value = getattr(event, field.name)
        if isinstance(value, dpe.DpEvent):
            obj[field.name] = _event_to_obj(value)
        elif isinstance(value, (list, tuple)) and value and isinstance(value[0], dpe.DpEvent):
            obj[field.name] = [_event_to_obj(v) for v in value]
        elif isinstance(value, (list, tuple)):
            obj[field.name] = [float(v) if isinstance(v, float) else v for v in value]
        else:
            obj[field.name] = value
    return obj


def _event_from_obj(obj: dict) -> dpe.DpEvent:
    obj = dict(obj)
    name = obj.pop("type")
    cls = getattr(dpe, name, None)
    if not (isinstance(cls, type) and issubclass(cls, dpe.DpEvent)):
        raise ValueError(f"unknown DpEvent type {name!r}")
    kwargs = {}
    for key, value in obj.items():
        if isinstance(value, dict) and "type" in value:
            kwargs[key] = _event_from_obj(value)
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            kwargs[key] = [_event_from_obj(v) for v in value]
        else:
            kwargs[key] = value
    return cls(**kwargs)


def event_to_json(event: dpe.DpEvent) -> str:
    """Serialize a (possibly nested) DpEvent to canonical JSON: ``{"type": <class>, <fields>}``."""
    return json.dumps(_event_to_obj(event), sort_keys=True, allow_nan=True)


def event_from_json(text: str) -> dpe.DpEvent:
    """Inverse of ``event_to_json``: ``event_from_json(event_to_json(e)) == e``."""
    return _event_from_obj(json.loads(text))


def gaussian_event(sigma: float, sensitivity: float = 1.0, count: int = 1) -> dpe.DpEvent:
    """``count`` adaptive Gaussian releases with noise ``sigma`` and L2 ``sensitivity``."""
    if sigma <= 0 or sensitivity <= 0 or count < 1:
        raise ValueError(f"need sigma>0, sensitivity>0, count>=1; got {sigma}, {sensitivity}, {count}")
    event = dpe.GaussianDpEvent(noise_multiplier=sigma / sensitivity)
    return event if count == 1 else dpe.SelfComposedDpEvent(event=event, count=int(count))


# ---------------------------------------------------------------------------------------------
# (eps, delta) of composed events
# ---------------------------------------------------------------------------------------------

def epsilon_of(event: dpe.DpEvent, delta: float, accountant: str = "pld") -> float:
    """Smallest epsilon such that ``event`` is (epsilon, delta)-DP (upper bound; inf if none)."""
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    return float(_accountant(accountant).compose(event).get_epsilon(delta))


def augpe_sigma(p: float, r: float, rounds: int) -> float:
    """Aug-PE baseline noise for the same (p, r) budget: the paper's comparison (Sec. 4).

    Aug-PE adds N(0, sigma^2) to a vote histogram each round; a record casts one vote, so the
    record-level (add/remove one record) L2 sensitivity is 1, and ``rounds`` histograms compose to
    sqrt(T)/sigma-GDP. Setting that equal to mu(p, r) = Phi^-1(1-p) - Phi^-1(1-r) (Lemma 3.3) gives
    sigma = sqrt(T) / mu(p, r). Note this protects single records only; a secret repeated in k
    records would need k times the noise (group privacy).
    """
    mu = float(mu_from_pr(p, r))
    if not mu > 0:
        raise ValueError(f"need r > p for a finite noise, got p={p}, r={r}")
    return math.sqrt(rounds) / mu
