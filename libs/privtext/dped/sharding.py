"""DPED partition into N disjoint teacher shards (Alg. 1 line 2).

Each privacy unit goes to shard ``H(salt, unit) mod N`` with a fixed hash, so adding or removing
one unit changes exactly one shard and leaves every other unit where it was (the disjointness the
teacher-sensitivity argument needs; a balanced split by row position would move other rows).
The unit is ``user_id`` when every row has one (user-level adjacency), otherwise the document id
(record-level adjacency); ``ShardAssignment.adjacency`` says which, for the ledger.
"""
from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


def shard_of(key: str, n_shards: int, salt: str) -> int:
    """The shard of one unit key (usable row by row inside a Spark pandas UDF)."""
    digest = hashlib.blake2b(f"{salt}\x00{key}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") % n_shards


@dataclass(frozen=True)
class ShardAssignment:
    shard: np.ndarray  # [rows] shard index per row
    unit: np.ndarray  # [rows] privacy-unit key per row
    adjacency: str  # "user" or "record"


def assign_shards(
    doc_ids: Sequence[str], n_shards: int, salt: str, user_ids: Sequence[str | None] | None = None
) -> ShardAssignment:
    """Shard per row: by user when ``user_ids`` is given without gaps, else by document id."""
    by_user = user_ids is not None and len(user_ids) > 0 and all(u is not None and u == u for u in user_ids)
    units = [f"user:{u}" for u in user_ids] if by_user else [f"doc:{d}" for d in doc_ids]
    shard = np.fromiter((shard_of(u, n_shards, salt) for u in units), dtype=np.int64, count=len(units))
    return ShardAssignment(shard=shard, unit=np.asarray(units), adjacency="user" if by_user else "record")
