"""Learned adversaries of the mPL audit (Sec. 2.4 "implicit joint probability", Sec. 3 step 2).

An RNN, LSTM (both bidirectional) or Transformer encoder reads a document's whole sequence of released
token embeddings (context plus replaced sensitive tokens, with a flag channel marking the replaced
positions: +1 released, -1 placeholder) and regresses the original embedding at every replaced
position: MSE loss on those positions, Adam (lr 1e-3), ReduceLROnPlateau on the validation MSE,
best-validation weights kept. Inputs and targets are standardised per dimension with training-split
statistics. The output adds a learned per-dimension gate times the released token itself (a skip
connection, initialised at 0): the adversary can copy or shrink what was released at the position,
which a small encoder cannot pass through its hidden bottleneck (d = 384 > hidden), so without it the
audit would miss the most direct leak.

Posterior (Sec. 2.4): q(x_i | y) = softmax_i(-||x_hat - x_i||^2 / (tau_base * tau)) over the candidate
set, with tau_base = 2 * validation MSE per dimension (the adversary's residual treated as isotropic
Gaussian noise, so tau = 1 is its own calibrated likelihood), mixed with ``floor`` of the uniform
distribution (Prop. 5, A1). Prior: the same architecture trained on the placeholder release, where
every replaced embedding is set to a fixed vector (Sec. 2.4 "prior approximation"): it sees the same
context, so mPL isolates what the released replacements add. ``train_shared`` fits ONE network on both
views (each batch once released, once placeholder, losses added): the prior and posterior then differ
only through the released tokens, not through two independent training runs, whose disagreement would
otherwise be counted as leakage (with small samples that noise dominates: a blind release measured
violation ratios of ~0.1 with separate models). The released view's posterior is mixed with a copy component,
"the released token itself, with probability w" (``CopyComponent``: what a regression cannot say for a release
that keeps a share of the values verbatim). CUDA when available.
"""
from __future__ import annotations

import copy
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from privtext.ampl.mpl import floor_log_probs
from privtext.ampl.sequences import ReleasedSequences
from privtext.ampl.settings import AmplSettings
from privtext.torch_scope import torch_scope


def resolve_device(name: str = "auto") -> torch.device:
    """``auto``: CUDA when ``torch.cuda.is_available()``, CPU otherwise."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device 'cuda' requested but torch.cuda.is_available() is False")
    return torch.device(name)


def _sinusoidal(length: int, dim: int, device: torch.device) -> torch.Tensor:
    pos = torch.arange(length, device=device, dtype=torch.float32)[:, None]
    freq = torch.exp(torch.arange(0, dim, 2, device=device, dtype=torch.float32) * (-math.log(10000.0) / dim))
    pe = torch.zeros(length, dim, device=device)
    pe[:, 0::2] = torch.sin(pos * freq)
    pe[:, 1::2] = torch.cos(pos * freq[: dim // 2])
    return pe


class SequenceAdversary(nn.Module):
    """Maps standardised [B, L, d + 1] inputs (embedding + replaced flag) to standardised [B, L, d]."""

    def __init__(self, kind: str, dim: int, settings: AmplSettings):
        super().__init__()
        self.kind = kind
        hidden = settings.hidden_size
        if kind in ("rnn", "lstm"):
            cls = nn.RNN if kind == "rnn" else nn.LSTM
            self.encoder = cls(dim + 1, hidden, num_layers=settings.num_layers, batch_first=True,
                               bidirectional=True, dropout=settings.dropout if settings.num_layers > 1 else 0.0)
            self.head = nn.Linear(2 * hidden, dim)
        elif kind == "transformer":
            self.inp = nn.Linear(dim + 1, hidden)
            layer = nn.TransformerEncoderLayer(hidden, settings.heads, dim_feedforward=2 * hidden,
                                               dropout=settings.dropout, batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, settings.num_layers, enable_nested_tensor=False)
            self.head = nn.Linear(hidden, dim)
        else:
            raise ValueError(f"unknown adversary {kind!r}; allowed: rnn, lstm, transformer")
        self.skip = nn.Parameter(torch.zeros(dim))  # gate on the released token (module doc)

    def forward(self, x: torch.Tensor, lengths: torch.Tensor, base: torch.Tensor) -> torch.Tensor:
        """``base``: the released token at each position in standardised target units (0 where none)."""
        length = x.shape[1]
        if self.kind == "transformer":
            h = self.inp(x) + _sinusoidal(length, self.inp.out_features, x.device)
            pad = torch.arange(length, device=x.device)[None, :] >= lengths[:, None]
            return self.head(self.encoder(h, src_key_padding_mask=pad)) + self.skip * base
        packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, _ = self.encoder(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=length)
        return self.head(out) + self.skip * base


@dataclass
class Standardizer:
    """Per-dimension mean/std of the inputs (all real tokens) and targets (replaced positions)."""

    in_mean: np.ndarray
    in_std: np.ndarray
    out_mean: np.ndarray
    out_std: np.ndarray

    @classmethod
    def fit(cls, batch: ReleasedSequences, chunk: int = 256) -> "Standardizer":
        """Streaming sums over chunks of documents: memory O(chunk * L * d), not O(n * L * d)."""
        dim = batch.released.shape[2]
        stats = {"in": [0, np.zeros(dim), np.zeros(dim)], "out": [0, np.zeros(dim), np.zeros(dim)]}
        for start in range(0, batch.n, chunk):
            part = batch.take(np.arange(start, min(start + chunk, batch.n)))
            real = np.arange(part.mask.shape[1])[None, :] < part.lengths[:, None]
            for key, values in (("in", part.released[real]), ("out", part.targets())):
                values = values.astype(np.float64)
                stats[key][0] += values.shape[0]
                stats[key][1] += values.sum(0)
                stats[key][2] += (values * values).sum(0)
        moments = []
        for count, total, total_sq in stats.values():
            mean = total / max(count, 1)
            moments += [mean, np.sqrt(np.maximum(total_sq / max(count, 1) - mean * mean, 0.0)) + 1e-6]
        return cls(*moments)


@dataclass
class TrainedAdversary:
    """A fitted adversary: ``val_mse`` is the per-dimension MSE on the validation split (raw scale)."""

    kind: str
    model: SequenceAdversary
    scaler: Standardizer
    placeholder: bool
    device: torch.device
    batch_size: int
    val_mse: float
    epoch_seconds: list[float] = field(default_factory=list)
    val_history: list[float] = field(default_factory=list)

    def predict(self, batch: ReleasedSequences) -> np.ndarray:
        """Reconstructed embeddings at the replaced positions, [n_obs, d] in ``batch.targets()`` order."""
        self.model.eval()
        rows = np.flatnonzero(batch.mask.any(axis=1))
        outs = []
        with torch.no_grad():
            for start in range(0, rows.size, self.batch_size):
                idx = rows[start:start + self.batch_size]
                x, lengths, mask, _, base = _tensors(batch, idx, self.scaler, self.placeholder, self.device)
                pred = self.model(x, lengths, base)[mask]
                outs.append(pred.double().cpu().numpy() * self.scaler.out_std + self.scaler.out_mean)
        if not outs:
            return np.zeros((0, batch.released.shape[2]))
        return np.concatenate(outs)


def _tensors(batch: ReleasedSequences, idx: np.ndarray, scaler: Standardizer, placeholder: bool,
             device: torch.device):
    """Standardised inputs, lengths, replaced-position mask, standardised targets and the released
    tokens in target units (the skip input; 0 in the placeholder view) for rows ``idx``, trimmed to the
    longest document among them."""
    lengths = batch.lengths[idx]
    cut = int(lengths.max())
    mask = batch.mask[idx, :cut]
    in_mean, in_std, out_mean, out_std = (np.asarray(v, dtype=np.float32)  # float32: the network's precision
                                          for v in (scaler.in_mean, scaler.in_std, scaler.out_mean, scaler.out_std))
    raw = batch.released[idx, :cut].astype(np.float32, copy=False)
    x = np.zeros(raw.shape[:2] + (raw.shape[2] + 1,), dtype=np.float32)
    real = np.arange(cut)[None, :] < lengths[:, None]
    keep = real & ~mask if placeholder else real
    x[..., :-1][keep] = (raw[keep] - in_mean) / in_std
    x[..., -1][mask] = -1.0 if placeholder else 1.0
    base = np.zeros(raw.shape, dtype=np.float32)
    if not placeholder:
        base[mask] = (raw[mask] - out_mean) / out_std
    target = (batch.original[idx, :cut].astype(np.float32, copy=False) - out_mean) / out_std
    return (torch.as_tensor(x, dtype=torch.float32, device=device),
            torch.as_tensor(lengths, dtype=torch.int64, device=device),
            torch.as_tensor(mask, device=device),
            torch.as_tensor(target, dtype=torch.float32, device=device),
            torch.as_tensor(base, dtype=torch.float32, device=device))


def _mse(model: SequenceAdversary, batch: ReleasedSequences, rows: np.ndarray, scaler: Standardizer,
         placeholder: bool, device: torch.device, batch_size: int) -> float:
    """Validation MSE per dimension, in standardised units."""
    model.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for start in range(0, rows.size, batch_size):
            x, lengths, mask, target, base = _tensors(batch, rows[start:start + batch_size], scaler, placeholder,
                                                      device)
            err = (model(x, lengths, base)[mask] - target[mask]) ** 2
            total += float(err.sum())
            count += err.numel()
    return total / max(count, 1)


def train_adversary(kind: str, train: ReleasedSequences, val: ReleasedSequences, settings: AmplSettings,
                    seed: int, placeholder: bool = False) -> TrainedAdversary:
    """Fit one adversary (Sec. 2.4): MSE on replaced positions, Adam, reduce-on-plateau, best val kept.
    ``placeholder=True`` trains the prior model on the placeholder release."""
    return _fit(kind, train, val, settings, seed, (placeholder,))[0]


def train_shared(kind: str, train: ReleasedSequences, val: ReleasedSequences, settings: AmplSettings,
                 seed: int) -> tuple[TrainedAdversary, TrainedAdversary]:
    """(posterior, prior): one network trained on the released and the placeholder view (module doc)."""
    post, prior = _fit(kind, train, val, settings, seed, (False, True))
    return post, prior


def _fit(kind: str, train: ReleasedSequences, val: ReleasedSequences, settings: AmplSettings, seed: int,
         views: tuple[bool, ...]) -> list[TrainedAdversary]:
    """Train one network on the given views (False = released, True = placeholder); the loss and the
    validation MSE are summed over the views; one TrainedAdversary per view, sharing the network.
    torch's seed and ``torch_threads`` hold for the training only."""
    with torch_scope(seed=seed, threads=settings.torch_threads):
        return _train(kind, train, val, settings, seed, views)


def _train(kind: str, train: ReleasedSequences, val: ReleasedSequences, settings: AmplSettings, seed: int,
           views: tuple[bool, ...]) -> list[TrainedAdversary]:
    device = resolve_device(settings.device)
    scaler = Standardizer.fit(train)
    dim = train.released.shape[2]
    model = SequenceAdversary(kind, dim, settings).to(device)
    if False in views:
        with torch.no_grad():
            model.skip.copy_(torch.as_tensor(_skip_init(train, scaler), dtype=torch.float32, device=device))
    opt = torch.optim.Adam(model.parameters(), lr=settings.lr)
    sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=settings.plateau_factor,
                                                       patience=settings.plateau_patience)
    gen = np.random.default_rng(seed)
    train_rows = np.flatnonzero(train.mask.any(axis=1))
    val_rows = np.flatnonzero(val.mask.any(axis=1))
    if train_rows.size == 0 or val_rows.size == 0:
        raise ValueError("training and validation splits need documents with replaced positions")
    best, best_state, seconds, history = math.inf, None, [], []
    for _ in range(settings.epochs):
        start = time.perf_counter()
        model.train()
        order = gen.permutation(train_rows)
        for b in range(0, order.size, settings.batch_size):
            loss = 0.0
            for placeholder in views:
                x, lengths, mask, target, base = _tensors(train, order[b:b + settings.batch_size], scaler,
                                                          placeholder, device)
                loss = loss + ((model(x, lengths, base)[mask] - target[mask]) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        val_loss = sum(_mse(model, val, val_rows, scaler, p, device, settings.batch_size) for p in views)
        sched.step(val_loss)
        if device.type == "cuda":
            torch.cuda.synchronize()
        seconds.append(time.perf_counter() - start)
        history.append(val_loss)
        if val_loss < best:
            best, best_state = val_loss, copy.deepcopy(model.state_dict())
    if best_state is None:
        raise FloatingPointError(f"{kind} adversary: validation loss was never finite")
    model.load_state_dict(best_state)
    fitted = []
    for placeholder in views:
        adversary = TrainedAdversary(kind, model, scaler, placeholder, device, settings.batch_size, 0.0, seconds,
                                     history)
        adversary.val_mse = float(np.mean((adversary.predict(val) - val.targets()) ** 2))
        fitted.append(adversary)
    return fitted


def _skip_init(train: ReleasedSequences, scaler: Standardizer) -> np.ndarray:
    """Per-dimension least-squares gate of the target on the released token (standardised units):
    1 for a copy, ~0 for an independent replacement; training refines it (a gate starting at 0 moves
    only ~lr per step, too slow for the few epochs of an audit)."""
    base = (train.released[train.mask] - scaler.out_mean) / scaler.out_std
    target = (train.original[train.mask] - scaler.out_mean) / scaler.out_std
    return (base * target).sum(0) / np.maximum((base * base).sum(0), 1e-12)


def mean_baseline_mse(train: ReleasedSequences, val: ReleasedSequences) -> float:
    """Per-dimension MSE on ``val`` of predicting the training mean of the replaced embeddings."""
    return float(np.mean((val.targets() - train.targets().mean(axis=0)) ** 2))


class GaussianPosterior:
    """q(x_i | y_obs) = (1 - floor) softmax_i(-||pred_obs - x_i||^2 / scale) + floor / K, evaluated
    lazily at (observation, candidate) pairs; normalisers come from a chunked pass over all candidates
    on the adversary's device (float64), so no [n_obs, K] table is ever held. With ``copy`` (a
    ``CopyComponent``), mixed with the released token itself: see ``CopyComponent``."""

    def __init__(self, pred: np.ndarray, candidates: np.ndarray, scale: float, floor: float,
                 device: torch.device, chunk_elems: int = 1 << 24, copy: "CopyComponent | None" = None):
        if scale <= 0:
            raise ValueError("posterior scale must be positive")
        self.pred = np.asarray(pred, dtype=np.float64)
        self.candidates = np.asarray(candidates, dtype=np.float64)
        self.scale = scale
        self.floor = floor
        self.copy = copy
        cand = torch.as_tensor(self.candidates, device=device)
        cand_sq = (cand * cand).sum(1)
        rows = max(1, chunk_elems // max(1, cand.shape[0]))
        norms = []
        for s in range(0, self.pred.shape[0], rows):
            p = torch.as_tensor(self.pred[s:s + rows], device=device)
            sq = (p * p).sum(1)[:, None] + cand_sq[None, :] - 2.0 * p @ cand.T
            norms.append(torch.logsumexp(-sq.clamp_min(0.0) / scale, dim=1).cpu().numpy())
        self.log_norm = np.concatenate(norms) if norms else np.zeros(0)

    def log_prob(self, obs: np.ndarray, cand: np.ndarray) -> np.ndarray:
        """log q(cand | obs) per pair, each distinct pair computed once (an audit's 10^5 triplets repeat
        (observation, true secret) pairs: one per observation)."""
        k = self.candidates.shape[0]
        pairs, back = np.unique(np.asarray(obs, dtype=np.int64) * k + np.asarray(cand, dtype=np.int64),
                                return_inverse=True)
        o, c = pairs // k, pairs % k
        diff = self.pred[o] - self.candidates[c]
        logp = floor_log_probs(-np.einsum("ij,ij->i", diff, diff) / self.scale - self.log_norm[o], self.floor, k)
        if self.copy is not None:
            logp = self.copy.mix(logp, o, c)
        return logp[back.reshape(-1)]


def posterior_of(adversary: TrainedAdversary, batch: ReleasedSequences, candidates: np.ndarray, scale: float,
                 floor: float, copy: "CopyComponent | None" = None) -> GaussianPosterior:
    """The adversary's Sec. 2.4 posterior on ``batch`` at Gaussian ``scale`` (``shared_scale``), mixed with
    ``copy`` where given (the released view only)."""
    return GaussianPosterior(adversary.predict(batch), candidates, scale, floor, adversary.device, copy=copy)


COPY_TEST_LEVEL = 0.01  # the copy weight is 0 unless "no copying" is rejected at this level (``copy_test``)


@dataclass(frozen=True)
class CopyComponent:
    """"The released token itself, with probability w" (issue 45): the released view's posterior becomes

        q(x | y_o) = w_o C(x | r_o) + (1 - w_o) q_G(x | y_o),

    q_G the floored Gaussian posterior (Sec. 2.4, Prop. 5 A1), r_o the token released at observation o,
    C(x | r) = 1 / m for the m candidates whose embedding equals r (a verbatim copy; 0 for every candidate
    when r is none of them: a public replacement), and w_o the weight of o's adjacency group (its type and
    format, public by design; ``fit_copy_weights``). A regression adversary cannot say this: for a release
    keeping 40% of names its MSE-optimal prediction shrinks the released name towards the mean and the
    Gaussian around it washes the copy out (40% verbatim scored 0.0000 on fixture mail).

    The prior (placeholder view) releases no token, so it has no copy component (w = 0). That asymmetry
    creates no leakage where there is none: for two candidates x_i, x_j of which neither is the copied
    one, q(x_i | y) / q(x_j | y) = q_G(x_i | y) / q_G(x_j | y) exactly (the factor 1 - w cancels; the floor
    sits inside q_G for that reason, rather than outside the mixture), so Eq. 5 is the Gaussian's for every
    triplet whose released token is neither x_i nor x_j. A release independent of the secret (the uniform
    control: r uniform over the K candidates) therefore changes the violation ratio by at most the share of
    triplets with r in {x_i, x_j}, 2 / K in expectation, whatever w is; and w is 0 unless the validation
    split rejects "no copying" at the 1% level (``copy_test``, exact at any sample size), so on such a
    release the posterior is the Gaussian's with probability >= 0.99 per group. w is capped at 1 - floor
    so every posterior stays >= floor^2 / K (A1)."""

    points: np.ndarray  # [K] id of each candidate's embedding (candidates with one embedding share it)
    multiplicity: np.ndarray  # [points] candidates per embedding
    copied: np.ndarray  # [n_obs] point id of the released token, -1 where it is no candidate
    weight: np.ndarray  # [n_obs] w of the observation's group

    def mix(self, logp: np.ndarray, obs: np.ndarray, cand: np.ndarray) -> np.ndarray:
        """log(w C + (1 - w) exp(logp)) at (observation, candidate) pairs."""
        w = np.where(self.copied[obs] >= 0, self.weight[obs], 0.0)  # nothing released to copy: off
        hit = (self.copied[obs] >= 0) & (self.points[cand] == self.copied[obs])
        copy = np.where(hit, w / self.multiplicity[np.maximum(self.copied[obs], 0)], 0.0)
        with np.errstate(divide="ignore"):
            return np.logaddexp(np.log(copy), np.log1p(-w) + logp)


def copied_points(batch: ReleasedSequences, candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(points [K], multiplicity [points], copied [n_obs]): the embedding id of every candidate, how many
    candidates share it, and per replaced position (``targets()`` order) the id of the candidate embedding
    the released token equals (float32 round-off allowed), -1 where it equals none."""
    candidates = np.asarray(candidates, dtype=np.float64)
    _, points, multiplicity = np.unique(candidates.astype(np.float32), axis=0, return_inverse=True,
                                        return_counts=True)
    points = points.reshape(-1)
    released = batch.released[batch.mask].astype(np.float64)
    near = nearest_candidate(released, candidates)
    gap = np.linalg.norm(released - candidates[near], axis=1) if near.size else np.zeros(0)
    tol = 1e-6 * (1.0 + np.linalg.norm(candidates[near], axis=1)) if near.size else np.zeros(0)
    return points, multiplicity, np.where(gap <= tol, points[near], -1)


def copy_test(hits: np.ndarray, null_mass: np.ndarray) -> float:
    """P[N >= sum(hits)] for N a sum of independent Bernoulli(``null_mass``): the exact p-value of "no copying".
    Without a copy component the secret at observation o is drawn from q_G, so it is the released token with
    probability q_G(released token | y_o) (``null_mass``) and the number of hits is Poisson-binomial; computed by
    its recursion, O(n * hits). (A chi-bar-square likelihood-ratio gate is only asymptotic: on the real CluSanT
    release it passed ONE weekday copy at q_G = 0.035 and set that group's w to 1.)"""
    k = int(np.sum(hits))
    if k == 0:
        return 1.0
    below = np.zeros(k)  # below[j] = P[N = j] over the observations so far, for j < k
    below[0] = 1.0
    for p in np.clip(np.asarray(null_mass, dtype=np.float64), 0.0, 1.0):
        below[1:] = below[1:] * (1 - p) + below[:-1] * p
        below[0] *= 1 - p
    return float(max(0.0, 1.0 - below.sum()))


def fit_copy_weight(log_gauss: np.ndarray, copy_mass: np.ndarray, null_mass: np.ndarray, floor: float = 0.0) -> float:
    """Maximum-likelihood w of sum_o log(w a_o + (1 - w) b_o) over [0, 1 - floor] (a_o = C(truth_o | r_o),
    b_o = q_G(truth_o | y_o) = exp(``log_gauss``)), then 0 unless ``copy_test`` rejects "no copying" at
    ``COPY_TEST_LEVEL`` (``null_mass``: q_G's mass on each observation's released token). The
    log-likelihood is concave in w (log of an affine function), so its derivative sum (a - b) / (w a + (1 - w) b)
    decreases and bisection finds its root. Pass only the observations whose released token is a candidate:
    elsewhere C is 0 everywhere and the component is off (w_o = 0)."""
    a = np.asarray(copy_mass, dtype=np.float64)
    b = np.exp(np.asarray(log_gauss, dtype=np.float64))
    if a.size == 0:
        return 0.0
    if copy_test(a > 0, null_mass) >= COPY_TEST_LEVEL:
        return 0.0

    def slope(w: float) -> float:
        return float(((a - b) / np.maximum(w * a + (1 - w) * b, 1e-300)).sum())

    lo, hi = 0.0, 1.0 - floor
    if slope(lo) <= 0:
        return 0.0
    if slope(hi) >= 0:
        return hi
    for _ in range(60):  # 2^-60 of the interval: below float64 resolution of w
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if slope(mid) > 0 else (lo, mid)
    return 0.5 * (lo + hi)


def fit_copy_weights(view: TrainedAdversary, val: ReleasedSequences, candidates: np.ndarray, scale: float,
                     floor: float, groups=None, rows: np.ndarray | None = None) -> dict:
    """w per adjacency group (``groups``: each candidate's; one group if None), each fitted by
    ``fit_copy_weight`` on the validation split of the released view (``rows``: only these of its replaced
    positions, ``targets()`` order), at the Gaussian ``scale`` of ``shared_scale``: never on the audited
    documents."""
    candidates = np.asarray(candidates, dtype=np.float64)
    points, multiplicity, copied = copied_points(val, candidates)
    truth = nearest_candidate(val.targets().astype(np.float64), candidates)
    usable = copied >= 0
    if rows is not None:
        usable &= np.isin(np.arange(usable.size), rows)
    rows = np.flatnonzero(usable)
    if rows.size == 0:
        return {}
    gauss = posterior_of(view, val, candidates, scale, floor)
    log_gauss = gauss.log_prob(rows, truth[rows])
    # q_G's mass on the released token: candidates with one embedding have one Gaussian probability each
    nearest = nearest_candidate(val.released[val.mask][rows].astype(np.float64), candidates)
    null = np.minimum(1.0, np.exp(gauss.log_prob(rows, nearest)) * multiplicity[copied[rows]])
    mass = (points[truth[rows]] == copied[rows]) / multiplicity[copied[rows]]
    key = np.asarray(_group_labels(groups, len(candidates)))[truth[rows]]
    return {k: fit_copy_weight(log_gauss[key == k], mass[key == k], null[key == k], floor) for k in np.unique(key)}


def copy_component(batch: ReleasedSequences, candidates: np.ndarray, truth: np.ndarray, weights: dict,
                   groups=None) -> CopyComponent:
    """The copy component on ``batch`` (``truth``: each observation's secret, read only for its public
    adjacency group) with the per-group ``weights`` of ``fit_copy_weights``."""
    points, multiplicity, copied = copied_points(batch, candidates)
    labels = np.asarray(_group_labels(groups, len(candidates)))[np.asarray(truth, dtype=np.int64)]
    weight = np.array([weights.get(g, 0.0) for g in labels], dtype=np.float64)
    return CopyComponent(points, multiplicity, copied, weight)


def _group_labels(groups, k: int):
    return [0] * k if groups is None else list(groups)


def nearest_candidate(targets: np.ndarray, candidates: np.ndarray, chunk_elems: int = 1 << 24) -> np.ndarray:
    """Index of each target's nearest candidate (squared L2, ties to the lower index), in row chunks of
    ``chunk_elems`` distances: memory O(chunk_elems), never a [targets, candidates, d] difference tensor."""
    cand_sq = (candidates * candidates).sum(1)
    rows = max(1, chunk_elems // max(1, len(candidates)))
    out = [np.argmin(cand_sq[None, :] - 2.0 * targets[s:s + rows] @ candidates.T, axis=1)
           for s in range(0, len(targets), rows)]
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


TEMPERATURE_GRID = tuple(2.0 ** (k / 2) for k in range(-4, 21))  # 0.25 .. 1024


def shared_scale(views: Sequence[TrainedAdversary], val: ReleasedSequences, candidates: np.ndarray, floor: float,
                 temperature: float | str = "calibrated", chunk_elems: int = 1 << 24,
                 rows: np.ndarray | None = None) -> float:
    """The one Gaussian scale tau_base * tau of the posterior AND the prior (Sec. 2.4): tau_base = 2 * the
    views' mean validation MSE per dimension (over ``rows`` of the replaced positions, ``targets()`` order, if
    given: the population the audit scores); tau the given number, or (``"calibrated"``) temperature scaling
    on held-out data (Guo et al. 2017): the grid temperature minimising the views' summed validation negative
    log-likelihood of the true candidate (an over-confident posterior inflates every log-ratio).

    One scale, because mPL (Eq. 5) is a difference of the two views' log-odds: with a scale s' for the
    posterior and s for the prior, an adversary that predicts p in both views (a release it learnt nothing
    from) still shows a shift (||p - x_j||^2 - ||p - x_i||^2)(1/s' - 1/s), which is near d^2 (1/s' - 1/s) where
    the context predicts the secret (p ~ x_i: boilerplate, a value repeated hundreds of times) and the same for
    every occurrence of that value; two separately calibrated temperatures differ by a grid step (sqrt 2) or
    by their validation noise, and on long repetitive mail that alone put the uniform control over delta.
    With one scale the shift is 2 (p' - p).(x_i - x_j) / s: only what the released tokens moved.
    The squared distances are computed once per chunk of validation targets and reused for every grid
    temperature."""
    targets = val.targets().astype(np.float64)
    preds = [view.predict(val) for view in views]
    if rows is not None:
        targets, preds = targets[rows], [p[rows] for p in preds]
    base = 2.0 * float(np.mean([np.mean((p - targets) ** 2) for p in preds]))  # each view's val_mse on ``rows``
    if temperature != "calibrated":
        return base * float(temperature)
    candidates = np.asarray(candidates, dtype=np.float64)
    truth = torch.as_tensor(nearest_candidate(targets, candidates))
    device = views[0].device
    cand = torch.as_tensor(candidates, device=device)
    cand_sq = (cand * cand).sum(1)
    scales = torch.as_tensor([base * t for t in TEMPERATURE_GRID], dtype=torch.float64, device=device)
    rows = max(1, chunk_elems // max(1, cand.shape[0]))
    nll = torch.zeros(len(TEMPERATURE_GRID), dtype=torch.float64, device=device)
    for pred in preds:
        pred = torch.as_tensor(pred, dtype=torch.float64, device=device)
        for s in range(0, pred.shape[0], rows):
            p, idx = pred[s:s + rows], truth[s:s + rows].to(device)
            sq = ((p * p).sum(1)[:, None] + cand_sq[None, :] - 2.0 * p @ cand.T).clamp_min(0.0)
            true_sq = sq.gather(1, idx[:, None])[:, 0]
            for g, scale in enumerate(scales):
                logp = -true_sq / scale - torch.logsumexp(-sq / scale, dim=1)
                nll[g] -= torch.as_tensor(floor_log_probs(logp.cpu().numpy(), floor, cand.shape[0])).sum()
    return base * float(TEMPERATURE_GRID[int(torch.argmin(nll))])
