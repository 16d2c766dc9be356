"""Write tests/harness/fixtures/authors_pool_metrics.json: the VPO authors' own pool metrics on the
shared reference score matrices, which tests/harness/test_pool_metrics.py checks ours against.

The matrices are the reward vectors of ``shared/data/*/authors_scores.jsonl`` (completions scored by
the authors' released scorers), one pool per problem and reward field. A Maze row with ``rewards_*``
(m answers of one completion) is a chain of its own; single answers are packed into chains of three
in file order (so per-chain and per-solution pass@k differ). The authors' function is imported from a checkout of
their repository, which this project does not vendor:

    python scripts/authors_pool_reference.py --authors /path/to/ryanboldi-vpo   # commit 767db79

(``--authors`` is the folder holding their ``vpo/`` package; it needs numpy only.)
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any, Iterator

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "harness" / "fixtures" / "authors_pool_metrics.json"
CHAIN = 3  # answers per chain
#: file under shared/data -> (the fields that name a problem, the reward fields, one pool each)
SOURCES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "maze/authors_scores.jsonl": (("index", "seed"), ("reward_linear", "reward_convex_bonus")),
    "musique/authors_scores.jsonl": (("id",), ("reward",)),
    "toolrl/authors_scores.jsonl": (("split", "id"), ("reward",)),
    "eureqa/authors_scores.jsonl": (("id",), ("authors_reward",)),
}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def reference_pools(data: Path) -> Iterator[tuple[str, str, list[list[float]], list[int]]]:
    """(source file, pool key, reward matrix, chain sizes) of every reference pool, in file order."""
    for rel, (keys, fields) in SOURCES.items():
        groups: dict[str, list[dict[str, Any]]] = {}
        with open(data / rel, encoding="utf-8") as f:
            for line in f:
                row = json.loads(line)
                groups.setdefault("/".join(str(row[k]) for k in keys), []).append(row)
        for key, rows in groups.items():
            for field in fields:
                matrix, sizes, loose = [], [], 0
                for r in rows:
                    many = r.get(field.replace("reward", "rewards", 1))
                    vectors = many if many is not None else [r[field]]
                    matrix += [list(map(float, v)) for v in vectors]
                    if many is not None or loose == 0:  # a chain of its own, or a new chain of singles
                        sizes.append(0)
                    sizes[-1] += len(vectors)
                    loose = 0 if many is not None else (loose + 1) % CHAIN
                yield rel, f"{key}:{field}", matrix, sizes


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--authors", required=True, help="checkout of github.com/ryanboldi/vpo (the folder holding vpo/)")
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"), help="the shared data folder")
    args = ap.parse_args(argv)
    sys.path.insert(0, args.authors)
    from vpo.utils.eval_metrics import compute_pool_metrics  # their code, not ours

    data = Path(args.data)
    pools = []
    for rel, key, matrix, sizes in reference_pools(data):
        chains = [c for c, z in enumerate(sizes) for _ in range(z)]
        got = compute_pool_metrics(matrix, rollout_ids=chains)
        pools.append({"source": rel, "key": key, "authors": {k: got[k] for k in KEYS}})
    head = json.dumps({"sha256": {rel: sha256(data / rel) for rel in SOURCES}, "chain": CHAIN})
    body = ",\n".join(json.dumps(p) for p in pools)  # one pool a line: a regenerated file diffs by pool
    FIXTURE.write_text(f'{head[:-1]}, "pools": [\n{body}\n]}}\n', encoding="utf-8")
    print(f"wrote {len(pools)} pools to {FIXTURE}")
    return 0


#: the authors' metric names this project re-implements
KEYS = ("max_sum", "best_individual", "pass@1_sol", "pass@2_sol", "pass@3_sol", "pass@1_chain", "pass@2_chain",
        "pass@3_chain", "witness_count", "witness_frac")

if __name__ == "__main__":
    sys.exit(main())
