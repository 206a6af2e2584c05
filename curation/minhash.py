"""MinHash signatures and LSH banding in numpy.

- Shingles are 64-bit integers; a signature is, per permutation, the minimum of
  ``(a * x + b) >> 32`` (multiply-shift hashing on uint64, wrapping on purpose).
- The MinHash of a union is the element-wise minimum of the parts' MinHashes, which
  lets a signature be assembled from cached parts (one per distinct instruction, one
  per distinct call).
- Bands and rows come from the target threshold: the (b, r) with b * r = num_perm
  that minimises the false-positive area left of the threshold plus the
  false-negative area right of it, under the S-curve P(candidate | J) = 1 - (1 - J^r)^b.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import numpy as np


def shingle_hash(texts: Iterable[str]) -> np.ndarray:
    """Stable 64-bit hashes of strings (blake2b), independent of the Python process."""
    return np.fromiter(
        (int.from_bytes(hashlib.blake2b(t.encode("utf-8"), digest_size=8).digest(), "little") for t in texts),
        dtype=np.uint64,
    )


def char_ngram_hashes(texts: list[str], n: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """(hashes, owner) of every character n-gram of every text, vectorised.

    A text shorter than ``n`` yields one shingle, the whole text."""
    encoded = [t.encode("utf-8") for t in texts]
    lengths = np.fromiter((len(b) for b in encoded), dtype=np.int64, count=len(encoded))
    buf = np.frombuffer(b"".join(encoded), dtype=np.uint8).astype(np.uint64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]) if len(lengths) else np.zeros(0, np.int64)
    windows = np.maximum(lengths - n + 1, 1)
    owner = np.repeat(np.arange(len(texts)), windows)
    first = np.repeat(starts, windows)
    offset = np.arange(owner.size) - np.repeat(np.cumsum(windows) - windows, windows)
    pos = first + offset
    h = np.full(owner.size, np.uint64(1469598103934665603))
    prime = np.uint64(1099511628211)
    total = buf.size
    with np.errstate(over="ignore"):
        for j in range(n):
            idx = pos + j
            valid = idx < np.repeat(starts + lengths, windows)
            byte = np.where(valid, buf[np.minimum(idx, max(total - 1, 0))] if total else 0, np.uint64(0))
            h = (h ^ byte) * prime
        h ^= h >> np.uint64(29)
    return h, owner


class MinHasher:
    """``num_perm`` hash functions drawn from ``seed`` (fixed: signatures must be comparable)."""

    def __init__(self, num_perm: int = 128, seed: int = 20240611):
        rng = np.random.default_rng(seed)
        self.num_perm = num_perm
        self.a = rng.integers(1, 2**63, num_perm, dtype=np.uint64) | np.uint64(1)
        self.b = rng.integers(0, 2**63, num_perm, dtype=np.uint64)

    def hash_rows(self, x: np.ndarray) -> np.ndarray:
        """Each shingle under every permutation: shape (len(x), num_perm), uint32."""
        with np.errstate(over="ignore"):
            return ((x[:, None] * self.a[None, :] + self.b[None, :]) >> np.uint64(32)).astype(np.uint32)

    def signatures(self, shingles: np.ndarray, owner: np.ndarray, n_owners: int) -> np.ndarray:
        """MinHash signature of each owner's shingle set: shape (n_owners, num_perm).

        ``owner`` must be sorted; an owner with no shingle gets all-max (and is never
        a candidate: callers exclude empty sets)."""
        sig = np.full((n_owners, self.num_perm), np.iinfo(np.uint32).max, dtype=np.uint32)
        if shingles.size == 0:
            return sig
        # shingles repeat (the same call in many episodes, the same n-gram in many texts): each distinct
        # one is hashed once; then one permutation at a time, its values gathered per row and reduced per
        # owner (a flat pass over contiguous memory, several times faster than a 2-D reduce)
        distinct, inverse = np.unique(shingles, return_inverse=True)
        table = np.ascontiguousarray(self.hash_rows(distinct).T)
        bounds = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
        owners = owner[bounds]
        for p in range(self.num_perm):
            sig[owners, p] = np.minimum.reduceat(table[p][inverse], bounds)
        return sig


def candidate_probability(j: float | np.ndarray, bands: int, rows: int) -> float | np.ndarray:
    """The LSH S-curve: chance that a pair of Jaccard similarity ``j`` shares a bucket."""
    return 1.0 - (1.0 - np.power(j, rows)) ** bands


def optimal_bands(threshold: float, num_perm: int, fp_weight: float = 0.5) -> tuple[int, int]:
    """(bands, rows) with bands * rows <= num_perm minimising weighted FP + FN area."""
    xs_lo = np.linspace(0.0, threshold, 200)
    xs_hi = np.linspace(threshold, 1.0, 200)
    best, best_err = (1, num_perm), float("inf")
    for bands in range(1, num_perm + 1):
        for rows in range(1, num_perm // bands + 1):
            fp = np.trapezoid(candidate_probability(xs_lo, bands, rows), xs_lo)
            fn = np.trapezoid(1.0 - candidate_probability(xs_hi, bands, rows), xs_hi)
            err = fp_weight * fp + (1 - fp_weight) * fn
            if err < best_err - 1e-12:
                best, best_err = (bands, rows), err
    return best


def band_keys(sig: np.ndarray, bands: int, rows: int, owners: np.ndarray | None = None) -> np.ndarray:
    """One 64-bit bucket key per (owner, band): shape (n_owners, bands). ``owners``: the rows of ``sig``
    to key (default all), taken a column at a time (a large round's signatures are not copied whole)."""
    n = sig.shape[0] if owners is None else len(owners)
    keys = np.empty((n, bands), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for b in range(bands):
            h = np.full(n, np.uint64(1469598103934665603) + np.uint64(b))
            for r in range(rows):
                column = sig[:, b * rows + r] if owners is None else sig[owners, b * rows + r]
                h = (h ^ column.astype(np.uint64)) * np.uint64(1099511628211)
            keys[:, b] = h
    return keys


def s_curve_table(bands: int, rows: int, points: Iterable[float] = (0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)) -> list[tuple[float, float]]:
    """(Jaccard, candidate probability) pairs for docs and logs."""
    return [(float(j), float(candidate_probability(j, bands, rows))) for j in points]
