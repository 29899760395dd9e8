"""Dominating pairs: the typed events a secret's accountant composes.

Each pair is a frozen class whose docstring states the maths an accountant needs (guarantee, adjacency,
sensitivity, exact or bound) and which gives its Renyi divergences at ``ORDERS`` (the screen) and its
privacy loss distribution (the exact composition; None: no guarantee). ``pair_of`` reads one from a
ledger row. Compatibility rule, as dp_accounting's ``dp_event``: never change what a field or a ``kind``
means; a new mechanism is a new class and a new ``params["pair"]["kind"]`` (docs/privacy-model.md).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from dp_accounting import dp_event as dpe
from dp_accounting.pld import common as pld_common, pld_privacy_accountant, privacy_loss_distribution as pld
from dp_accounting.rdp import rdp_privacy_accountant
from scipy.special import logsumexp

from privtext.errors import PrivtextError
from privtext.privacy.accounting import event_from_json
from privtext.privacy.secret_protection import mixture_pld

ORDERS = (1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 12.0, 16.0, 20.0, 24.0, 32.0, 48.0,
          64.0, 128.0, 256.0)
DISCRETIZATION = 1e-3  # PLD grid shared by every pair (compositions need one grid)


class UnsupportedCharge(PrivtextError, ValueError):
    """A ledger row the accountant cannot compose (a newer guarantee or pair kind, an unreadable event): refused,
    never read as another (``privacy.accountant``; docs/privacy-model.md, "Row compatibility")."""


class UnknownPair(UnsupportedCharge):
    """A secret charge whose recorded pair no accountant here supports (a newer row kind): refused."""


@dataclass(frozen=True)
class MixturePair:
    """SecPE's pair (Def. 3.1, Alg. 2 run ``rounds`` times): (p, r)-secret protection of a secret.

    Adjacency: D and D' differ only in the presence of the secret (in every record holding it).
    Sensitivity: each sampled record holding it adds 1 to each of the m = ``releases_per_round`` released
    counts, so per round P = sum_k Pr[C=k] N(sqrt(m) k, sigma^2) against Q = N(0, sigma^2), with C the number
    of its records sampled (``count_pmf``, Alg. 2 line 7). Exact pair; T rounds compose independently.
    sigma <= 0 (r >= 1): no noise, no guarantee."""

    sigma: float
    rounds: int
    releases_per_round: int
    count_pmf: tuple

    def rdp(self) -> np.ndarray:
        if self.sigma <= 0:
            return np.full(len(ORDERS), np.inf)
        return self.rounds * mixture_rdp(self.count_pmf, self.sigma, self.releases_per_round)

    def pld(self):
        if self.sigma <= 0:
            return None
        one = mixture_pld(self.count_pmf, self.sigma, self.releases_per_round, DISCRETIZATION)
        return one.self_compose(self.rounds) if self.rounds > 1 else one


@dataclass(frozen=True)
class PurePair:
    """eps-DP: binary randomized response with e^eps, which dominates every pure eps-DP mechanism (Kairouz et
    al. 2015). A secret's sanitized occurrences enter as one PurePair of the SUM of their worst-case pure-LDP
    eps (adjacency: two values of the same entity type and surface format; an upper bound of their
    composition)."""

    epsilon: float

    def rdp(self) -> np.ndarray:
        return pure_rdp(self.epsilon)

    def pld(self):
        return pure_pld(self.epsilon)


@dataclass(frozen=True)
class EventPair:
    """A dp-accounting DpEvent (its JSON, ``privacy.accounting.event_to_json``) for a group of ``group`` units.

    group 1: the event as recorded (Aug-PE's whole-secret event, a record/user event). group g: add/remove
    g records (users) at once, the Gaussian/Laplace noise relative to the sensitivity divided by g (L2/L1
    sensitivity at most g times, by the triangle inequality: an upper bound); other events cannot be scaled
    (refused, ``scale_event``). Exact for a Gaussian at group 1."""

    event: str
    group: int = 1

    def rdp(self) -> np.ndarray:
        return event_rdp(scale_event(event_from_json(self.event), self.group))

    def pld(self):
        return event_pld(scale_event(event_from_json(self.event), self.group))


@dataclass(frozen=True)
class UnprotectedPair:
    """A secret a release read as public (``privacy.reads.UNPROTECTED``): released without noise, so no
    guarantee (infinite divergence, blow-up 1)."""

    def rdp(self) -> np.ndarray:
        return np.full(len(ORDERS), np.inf)

    def pld(self):
        return None


Pair = MixturePair | PurePair | EventPair | UnprotectedPair


def pair_of(entry: dict, variant: int, records: int = 1) -> Pair:
    """The pair a secret charge (a ledger entry) puts on one secret: ``variant`` indexes its count pmfs
    (< 0: read as public), ``records`` is the secret's group size in what the release read (used by a
    per-record event, ``params["pair"]["record_event"]``)."""
    pair = entry["params"]["pair"]
    if variant < 0:
        return UnprotectedPair()
    if pair["kind"] == "secret_mixture":
        return MixturePair(float(pair["sigma"]), int(pair["rounds"]), int(pair["releases_per_round"]),
                           tuple(pair["count_pmfs"][int(variant)]))
    if pair["kind"] != "dp_event":
        raise UnknownPair(f"{entry['stage']}/{entry['mechanism']} charge: pair kind {pair['kind']!r} is not one "
                          "this accountant composes (secret_mixture, dp_event)")
    if pair.get("record_event"):  # the per-record event at the secret's own group size
        return EventPair(pair["record_event"], int(records))
    return EventPair(entry["dp_event"], 1)


# ---------------------------------------------------------------------------------------------
# Renyi DP of each pair (the screen) and its PLD (the exact composition)
# ---------------------------------------------------------------------------------------------

def mixture_rdp(count_pmf, sigma: float, releases_per_round: int, orders=ORDERS) -> np.ndarray:
    """D_a(P || Q) for one round's pair P = sum_k w_k N(sqrt(m) k / sigma, 1), Q = N(0, 1), per order a:
    (1/(a-1)) log E_Q[(P/Q)^a], integrated on a fine grid (trapezoid on a smooth integrand of width 1:
    spectrally accurate). Closed form for one atom: a s^2 / 2."""
    w = np.asarray(count_pmf, dtype=np.float64)
    k = np.flatnonzero(w > 0)
    w = w[k]
    s = math.sqrt(releases_per_round) * k / sigma
    if s[-1] == 0:
        return np.zeros(len(orders))
    out = []
    for a in orders:
        x = np.arange(-12.0, a * s[-1] + 12.0, 0.02)
        loss = logsumexp(np.outer(x, s) - 0.5 * s**2, b=w, axis=1)
        log_int = logsumexp(a * loss - 0.5 * x**2) + math.log(0.02) - 0.5 * math.log(2 * math.pi)
        out.append(max(0.0, log_int / (a - 1)))
    return np.asarray(out)


def pure_rdp(epsilon: float, orders=ORDERS) -> np.ndarray:
    """Renyi divergence of binary randomized response with eps (the dominating pair of eps-DP)."""
    if epsilon == 0:
        return np.zeros(len(orders))
    lp, lq = -np.logaddexp(0.0, -epsilon), -np.logaddexp(0.0, epsilon)  # log p, log q, p = e^eps/(1+e^eps)
    a = np.asarray(orders)
    return np.logaddexp(a * lp + (1 - a) * lq, a * lq + (1 - a) * lp) / (a - 1)


def event_rdp(event: dpe.DpEvent, orders=ORDERS) -> np.ndarray:
    accountant = rdp_privacy_accountant.RdpAccountant(list(orders))
    return np.asarray(accountant.compose(event)._rdp, dtype=np.float64)  # noqa: SLF001


def scale_event(event: dpe.DpEvent, group: int) -> dpe.DpEvent:
    """The event for a group of ``group`` units: Gaussian/Laplace noise relative to the sensitivity
    divided by ``group`` (L2/L1 sensitivity at most ``group`` times). Other events: refused."""
    if group == 1:
        return event
    if isinstance(event, dpe.GaussianDpEvent):
        return dpe.GaussianDpEvent(event.noise_multiplier / group)
    if isinstance(event, dpe.LaplaceDpEvent):
        return dpe.LaplaceDpEvent(event.noise_multiplier / group)
    if isinstance(event, dpe.SelfComposedDpEvent):
        return dpe.SelfComposedDpEvent(scale_event(event.event, group), event.count)
    if isinstance(event, dpe.ComposedDpEvent):
        return dpe.ComposedDpEvent([scale_event(e, group) for e in event.events])
    if isinstance(event, dpe.NoOpDpEvent):
        return event
    raise ValueError(f"cannot scale a {type(event).__name__} to a group of {group}: refusing the charge")


def event_pld(event: dpe.DpEvent) -> pld.PrivacyLossDistribution:
    accountant = pld_privacy_accountant.PLDAccountant(value_discretization_interval=DISCRETIZATION)
    return accountant.compose(event)._pld  # noqa: SLF001


def pure_pld(epsilon: float) -> pld.PrivacyLossDistribution:
    return pld.from_privacy_parameters(pld_common.DifferentialPrivacyParameters(epsilon, 0.0),
                                       value_discretization_interval=DISCRETIZATION)
