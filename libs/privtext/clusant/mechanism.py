"""CluSanT's two-step token sanitization mechanism (Fig. 1, Fig. 2, Theorem 5) and its extreme settings.

Setting. A replacement vocabulary V (public phrases, unit-norm embeddings f(y), one row each) is
partitioned into clusters with centroids c_C. An input is ANY span embedding f(x) (unit norm, usually
not in V); its cluster C_x is the cluster of its nearest vocabulary phrase (for a phrase of V this is
its own cluster, as in the paper).

Cluster embedding (Fig. 1) with factor k >= 1:  f'(C) = k c_C,  f'(x) = k c_{C_x} + (f(x) - c_{C_x}).

Mechanism M(x) (Fig. 2), with eps_c + eps_t = eps (Fig. 2: eps_c = eps_t = eps / 2):
  1. cluster:  Pr[C | x] proportional to exp(-eps_c * ||f'(x) - f'(C)|| / 2)   (Def. 2, Delta u_c = 1)
  2. token:    Pr[y | x, C] proportional to exp(-eps_t * ||f(x) - f(y)|| / (2 Delta_u)),  y in C,
     with Fig. 2's Delta_u = max(1, max_{x,x',y in V} |d(x,y) - d(x',y)|) = max(1, diameter of V).
Step 1 uses the input's own cluster embedding f'(x) where Fig. 2 writes f'(C_x). The two agree for
the paper's SanText setting on vocabulary inputs; f'(x) is defined for spans outside V, gives
SanText EXACTLY for any input at k = 1 with singleton clusters, and needs no assumption (2) below.

Guarantee (proved here; this is what ``log_ratio_bound`` returns and the tests audit exactly).
For all inputs x, x' and every output y,
  |log Pr[M(x)=y] - log Pr[M(x')=y]| <= eps_c ||f'(x) - f'(x')|| + eps_t ||f(x) - f(x')|| / Delta_u.
Proof: each step is an exponential mechanism whose utility changes by at most the bracketed distance
(triangle inequality); the numerator and the normaliser each move by at most eps_E/2 times it.
So M is eps-metric-LDP (Alvim et al. 2018) for the metric
  D_k(x, x') = (eps_c ||f'(x) - f'(x')|| + eps_t ||f(x) - f(x')|| / Delta_u) / eps,
where ||.|| is the Euclidean norm of sentence embeddings (d = d_c = Euclidean, as in the paper).
Adjacency: any two inputs (local model); the vocabulary and clustering are public and fixed.
* Same cluster: f'(x) - f'(x') = f(x) - f(x'), so D_k <= ||f(x) - f(x')||: eps-mLDP in Euclidean
  distance, as SanText.
* Different clusters: D_k <= ||f(x) - f(x')|| + (k - 1)/2 ||c_{C_x} - c_{C_x'}|| (Fig. 2 split): the
  bound between clusters grows LINEARLY in k (App. D's remark, made exact).
* Pure LDP over unit-norm inputs: eps_c (2 + (k-1) max ||c_i - c_j||) + eps_t 2 / Delta_u
  (``ldp_epsilon``), tighter than App. D's Fact 3.
Notes on the paper. Theorem 5 claims eps-mLDP for d_c(f'(x), f'(x')) under its assumptions (1)-(2);
its proof is right given them (its Thm. 1.1 drops the normaliser's term, harmless there because the
bounds used are uniform in y). But assumption (2), d_c(C_x, C_x') + 1 <= 2 d_c(f'(x), f'(x')), fails
for unit-norm embeddings at small k (e.g. k = 1, used in Table 1): Fig. 2's literal step 1 on f'(C_x)
then violates eps * d_c(f'(x), f'(x')) for close inputs on both sides of a cluster border (a unit
test shows it). The bound above holds for every k and needs no assumption. The paper's note that
unit-norm embeddings have sensitivity 1 is wrong (distances reach 2); Fig. 2's max(1, .) rule
handles that for the LDP statement only.

Named settings:
* ``santext(vocab, eps)``: singleton clusters, k = 1, the whole eps on step 1 (step 2 has one
  candidate): Pr[y | x] proportional to exp(-eps ||f(x) - f(y)|| / 2), SanText (Yue et al. 2021).
* ``custext(vocab, labels, eps)``: k = inf (step 1 always picks C_x), step 2 with eps and CusText's
  normalised utility u = -(d - d_min)/(d_max - d_min) within C (App. B.2), i.e. Delta_u = diameter of
  C. No guarantee across clusters (Thm. 4): ``log_ratio_bound`` is inf there.
* ``clusant(vocab, labels, eps, k)``: Fig. 2 with eps/2 per step and Fig. 2's Delta_u.
"""
from __future__ import annotations

import math

import numpy as np

from privtext.privacy.mechanisms import exponential_log_probs, sample_categorical

from .clustering import singleton_clusters

METHODS = ("clusant", "santext", "custext")
METRIC = "D_k"  # the metric of the proved bound (module docstring), with its k


def pairwise_distances(a: np.ndarray, b: np.ndarray, b_sq: np.ndarray | None = None) -> np.ndarray:
    """Euclidean distances between the rows of ``a`` and ``b`` (one matrix product)."""
    b_sq = (b * b).sum(axis=1) if b_sq is None else b_sq
    d2 = (a * a).sum(axis=1)[:, None] + b_sq[None, :] - 2.0 * (a @ b.T)
    return np.sqrt(np.maximum(d2, 0.0))


def diameter(points: np.ndarray, chunk: int = 1024) -> float:
    """Largest Euclidean distance between two rows (computed in row chunks)."""
    sq = (points * points).sum(axis=1)
    return max(float(pairwise_distances(points[i : i + chunk], points, sq).max()) for i in range(0, len(points), chunk))


def cluster_centroids(embeddings: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Centroid (mean embedding) of every cluster, row i for label i (Fig. 1 step 1)."""
    n = int(labels.max()) + 1
    sums = np.zeros((n, embeddings.shape[1]))
    np.add.at(sums, labels, embeddings)
    return sums / np.bincount(labels, minlength=n)[:, None]


class CluSanT:
    """The mechanism over one entity type's vocabulary, with precomputed tables (see module doc)."""

    def __init__(
        self,
        vocab: np.ndarray,
        labels: np.ndarray,
        *,
        k: float,
        eps_cluster: float,
        eps_token: float,
        token_sensitivity: np.ndarray | float,
        name: str = "clusant",
        chunk_rows: int = 4096,
    ):
        self.vocab = np.ascontiguousarray(vocab, dtype=np.float64)
        self.labels = np.asarray(labels, dtype=np.int64)
        if self.vocab.ndim != 2 or self.labels.shape != (len(self.vocab),):
            raise ValueError("vocab must be (V, dim) and labels (V,)")
        counts = np.bincount(self.labels)
        if self.labels.min() < 0 or (counts == 0).any():
            raise ValueError("labels must number the clusters 0..n-1 with no empty cluster")
        if not k >= 1:
            raise ValueError(f"k must be >= 1 (or inf), got {k}")
        self.name, self.k, self.chunk_rows = name, float(k), chunk_rows
        self.eps_cluster, self.eps_token = float(eps_cluster), float(eps_token)
        self.n_clusters = len(counts)
        self.sizes = counts
        self.vocab_sq = (self.vocab * self.vocab).sum(axis=1)
        self.centroids = cluster_centroids(self.vocab, self.labels)
        # members[C, j]: j-th vocabulary row of cluster C, -1 padding
        order = np.argsort(self.labels, kind="stable")
        offsets = np.concatenate([[0], np.cumsum(counts)[:-1]])
        self.members = np.full((self.n_clusters, counts.max()), -1, dtype=np.int64)
        self.members[self.labels[order], np.arange(len(order)) - offsets[self.labels[order]]] = order
        self.token_sensitivity = np.broadcast_to(np.asarray(token_sensitivity, dtype=np.float64),
                                                 (self.n_clusters,)).copy()
        if (self.token_sensitivity <= 0).any():
            raise ValueError("token sensitivity must be positive")
        self.step1_random = self.n_clusters > 1 and math.isfinite(self.k)
        self.step2_random = bool(counts.max() > 1)
        if self.step1_random and self.eps_cluster <= 0:
            raise ValueError("eps_cluster must be positive when there is more than one cluster and k is finite")
        if self.step2_random and self.eps_token <= 0:
            raise ValueError("eps_token must be positive when a cluster holds more than one token")
        if self.step1_random:
            self.cluster_emb = self.k * self.centroids  # f'(C) = k c_C
            self.cluster_emb_sq = (self.cluster_emb**2).sum(axis=1)

    # ---- the two steps ----------------------------------------------------------------------------
    def _prepare(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Distances from each input to every vocabulary phrase, and each input's cluster C_x."""
        dist = pairwise_distances(x, self.vocab, self.vocab_sq)
        return dist, self.labels[np.argmin(dist, axis=1)]

    def _cluster_log_probs(self, x: np.ndarray, cx: np.ndarray) -> np.ndarray:
        """Step 1: log Pr[C | x], shape (B, n_clusters)."""
        if not self.step1_random:  # one cluster, or k = inf: C_x with probability 1
            out = np.full((len(x), self.n_clusters), -np.inf)
            out[np.arange(len(x)), cx] = 0.0
            return out
        fx = x + (self.k - 1.0) * self.centroids[cx]  # f'(x) = k c + (f(x) - c)
        utility = -pairwise_distances(fx, self.cluster_emb, self.cluster_emb_sq)
        return exponential_log_probs(utility, self.eps_cluster, 1.0)

    def _token_log_probs(self, dist: np.ndarray, clusters: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Step 2 for the given clusters (shape (...)): (members, log Pr[member | x, C]) padded with -1/-inf."""
        members = self.members[clusters]
        if not self.step2_random:
            return members, np.zeros(members.shape)
        rows = np.arange(len(dist)).reshape((-1,) + (1,) * (members.ndim - 1))
        utility = -dist[rows, np.maximum(members, 0)] / self.token_sensitivity[clusters][..., None]
        utility = np.where(members >= 0, utility, -np.inf)
        return members, exponential_log_probs(utility, self.eps_token, 1.0)

    # ---- public API -------------------------------------------------------------------------------
    def log_probabilities(self, inputs: np.ndarray) -> np.ndarray:
        """Exact log Pr[M(x) = y] for every input row x and vocabulary row y, shape (B, V)."""
        x = np.atleast_2d(np.asarray(inputs, dtype=np.float64))
        dist, cx = self._prepare(x)
        lp_cluster = self._cluster_log_probs(x, cx)
        all_clusters = np.broadcast_to(np.arange(self.n_clusters), (len(x), self.n_clusters))
        members, lp_token = self._token_log_probs(dist, all_clusters)
        out = np.full((len(x), len(self.vocab)), -np.inf)
        valid = members[0] >= 0
        out[:, members[0][valid]] = (lp_cluster[:, :, None] + lp_token)[:, valid]
        return out

    def probabilities(self, input_embedding: np.ndarray) -> np.ndarray:
        """The full output distribution Pr[M(x) = y] over the vocabulary for one input x, shape (V,)."""
        return np.exp(self.log_probabilities(np.asarray(input_embedding)[None, :])[0])

    def sample(self, rng: np.random.Generator, inputs: np.ndarray) -> np.ndarray:
        """One replacement index per input row, vectorised over the batch (Gumbel-max, two steps)."""
        x = np.atleast_2d(np.asarray(inputs, dtype=np.float64))
        out = np.empty(len(x), dtype=np.int64)
        for start in range(0, len(x), self.chunk_rows):
            xb = x[start : start + self.chunk_rows]
            dist, cx = self._prepare(xb)
            chosen = sample_categorical(rng, self._cluster_log_probs(xb, cx)) if self.step1_random else cx
            members, lp_token = self._token_log_probs(dist, chosen)
            pos = sample_categorical(rng, lp_token) if self.step2_random else np.zeros(len(xb), dtype=np.int64)
            out[start : start + len(xb)] = members[np.arange(len(xb)), pos]
        return out

    def clusters_of(self, x: np.ndarray) -> np.ndarray:
        """C_x per row, computed once per distinct row and ``chunk_rows`` rows at a time (pairs repeat rows)."""
        x = np.ascontiguousarray(x)
        rows = x.view(np.dtype((np.void, x.shape[1] * x.itemsize))).ravel()  # one bytes key per row
        _, first, inverse = np.unique(rows, return_index=True, return_inverse=True)
        unique = x[first]
        out = np.empty(len(unique), dtype=np.int64)
        for start in range(0, len(unique), self.chunk_rows):
            out[start : start + self.chunk_rows] = self._prepare(unique[start : start + self.chunk_rows])[1]
        return out[inverse.reshape(-1)]

    def log_ratio_bound(self, a: np.ndarray, b: np.ndarray, clusters: tuple | None = None) -> np.ndarray:
        """Upper bound on max_y |log Pr[M(a)=y] - log Pr[M(b)=y]| for paired rows a, b (module doc);
        ``clusters``: (C_a, C_b) where the caller has them (``pair_metric``), else found here."""
        a, b = np.atleast_2d(a).astype(np.float64), np.atleast_2d(b).astype(np.float64)
        ca, cb = clusters if clusters is not None else np.split(self.clusters_of(np.concatenate([a, b])), [len(a)])
        if self.n_clusters == 1:
            step1 = np.zeros(len(a))
        elif not math.isfinite(self.k):
            step1 = np.where(ca == cb, 0.0, np.inf)
        else:
            shift = (self.k - 1.0) * (self.centroids[ca] - self.centroids[cb])
            step1 = self.eps_cluster * np.linalg.norm(a - b + shift, axis=1)
        step2 = 0.0
        if self.step2_random:
            step2 = self.eps_token * np.linalg.norm(a - b, axis=1) / self.token_sensitivity[self.sizes > 1].min()
        return step1 + step2

    def metric(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """D_k(a, b): the metric for which the mechanism is eps-mLDP (inf across clusters when k = inf)."""
        return self.log_ratio_bound(a, b) / self.epsilon

    def pair_metric(self, x: np.ndarray):
        """(i, j) -> D_k(x[i], x[j]) for index arrays, C_x found once per row of ``x``: the audit's 10^5 pairs
        over ~10^3 values, where ``metric`` on the pairs' rows spent 83 of its 116 s (load 33) finding the
        distinct ones among 2 x 10^5 rows."""
        x = np.atleast_2d(np.asarray(x, dtype=np.float64))
        clusters = self.clusters_of(x)
        return lambda i, j: self.log_ratio_bound(x[i], x[j], (clusters[i], clusters[j])) / self.epsilon

    @property
    def epsilon(self) -> float:
        return (self.eps_cluster if self.step1_random else 0.0) + (self.eps_token if self.step2_random else 0.0)

    def ldp_epsilon(self) -> float:
        """Pure eps-LDP over unit-norm inputs: eps_c (2 + (k-1) max||c_i - c_j||) + eps_t 2 / min Delta_u."""
        if self.n_clusters > 1 and not math.isfinite(self.k):
            return math.inf
        step1 = self.eps_cluster * (2.0 + (self.k - 1.0) * diameter(self.centroids)) if self.step1_random else 0.0
        step2 = 2.0 * self.eps_token / self.token_sensitivity[self.sizes > 1].min() if self.step2_random else 0.0
        return float(step1 + step2)

    def guarantee(self) -> dict:
        """Parameters of this mechanism's privacy-ledger record."""
        private = self.n_clusters == 1 or math.isfinite(self.k)
        return {
            "guarantee": "mldp" if private else "none",
            "mechanism": self.name,
            "metric": METRIC,
            "eps": self.epsilon,
            "eps_cluster": self.eps_cluster if self.step1_random else 0.0,
            "eps_token": self.eps_token if self.step2_random else 0.0,
            "k": self.k,
            "n_clusters": self.n_clusters,
            "vocabulary_size": len(self.vocab),
            "token_sensitivity_min": float(self.token_sensitivity[self.sizes > 1].min()) if self.step2_random else None,
            "ldp_eps": self.ldp_epsilon() if private else None,  # None: unbounded
            "bound_note": BOUND_NOTE if private else CUSTEXT_NOTE,
        }


BOUND_NOTE = (
    "eps-mLDP for D_k(x,x') = (eps_c*||f'(x)-f'(x')|| + eps_t*||f(x)-f(x')||/Delta_u)/eps, f = unit-norm phrase "
    "embedding, f'(x) = f(x) + (k-1)*centroid(C_x) (CluSanT Fig. 1); within a cluster D_k <= ||f(x)-f(x')||; "
    "between clusters D_k <= ||f(x)-f(x')|| + (k-1)/2*||c_x - c_x'||, growing linearly with k"
)
CUSTEXT_NOTE = "CusText: eps-mLDP only within a cluster; no (metric) LDP guarantee across clusters (CluSanT Thm. 4)"


def _fig2_sensitivity(vocab: np.ndarray) -> float:
    """Fig. 2: Delta_u = max(1, max_{x,x',y in V} |d(x,y) - d(x',y)|) = max(1, diameter of V)."""
    return max(1.0, diameter(np.asarray(vocab, dtype=np.float64)))


def _cluster_diameters(vocab: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """d_max - d_min within each cluster (App. B.2; d_min = 0); 1 for singletons (never used)."""
    vocab = np.asarray(vocab, dtype=np.float64)
    diam = np.ones(int(labels.max()) + 1)
    for c in np.unique(labels):
        rows = vocab[labels == c]
        if len(rows) > 1:
            diam[c] = diameter(rows)
    return diam


def clusant(vocab: np.ndarray, labels: np.ndarray, eps: float, k: float) -> CluSanT:
    """CluSanT (Fig. 2): eps/2 on the cluster step, eps/2 on the token step, Fig. 2's Delta_u."""
    return CluSanT(vocab, labels, k=k, eps_cluster=eps / 2, eps_token=eps / 2,
                   token_sensitivity=_fig2_sensitivity(vocab), name="clusant")


def santext(vocab: np.ndarray, eps: float) -> CluSanT:
    """SanText: singleton clusters, k = 1, all of eps on the (only random) step 1."""
    return CluSanT(vocab, singleton_clusters(len(vocab)), k=1.0, eps_cluster=eps, eps_token=0.0,
                   token_sensitivity=1.0, name="santext")


def custext(vocab: np.ndarray, labels: np.ndarray, eps: float) -> CluSanT:
    """CusText (App. B.2): k = inf, exponential mechanism with eps inside C_x, Delta_u = diameter of C_x."""
    return CluSanT(vocab, labels, k=math.inf, eps_cluster=0.0, eps_token=eps,
                   token_sensitivity=_cluster_diameters(vocab, labels), name="custext")


def build_mechanism(method: str, vocab: np.ndarray, labels: np.ndarray, eps: float, k: float) -> CluSanT:
    """The named setting ``method`` ('clusant', 'santext' or 'custext'); santext ignores labels and k."""
    if method == "clusant":
        return clusant(vocab, labels, eps, k)
    if method == "santext":
        return santext(vocab, eps)
    if method == "custext":
        return custext(vocab, labels, eps)
    raise ValueError(f"unknown method {method!r}; allowed: {', '.join(METHODS)}")
