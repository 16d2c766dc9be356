"""Seeds derived from (run seed, problem id, sample index) so k samples are never k copies."""
from __future__ import annotations

import hashlib


def derive_seed(run_seed: int, problem_id: str, index: int, salt: str = "") -> int:
    """A 31-bit seed that is a pure function of its arguments (stable across processes and Pythons)."""
    h = hashlib.blake2b(f"{run_seed}\x00{problem_id}\x00{index}\x00{salt}".encode(), digest_size=8)
    return int.from_bytes(h.digest(), "little") & 0x7FFFFFFF
