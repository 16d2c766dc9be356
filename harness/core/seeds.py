"""Seed groups: one run per sampling seed under one parent folder.

    PARENT/seeds.json     the marker: ``{"kind": "seeds", "seeds": [0, 1, 2], "identity": {...}}``
    PARENT/seed-0/        an ordinary run folder (config.json, samples.jsonl, results.json)
    PARENT/seed-1/        ...

A run's problems all share its sampling seed, so its standard error over problems cannot see how
much the numbers move with the seed; the authors' reproduction notes average several evaluation
seeds for that reason. Each seed stays an ordinary, separately resumable run (so an interrupted
group resumes seed by seed, and a seed folder can be read alone); the marker only lists the seeds
and the identity they share less the seed, so a later ``vpo run --seed 5 --out PARENT`` can only add
a seed of the same run. Readers (``harness.core.results.load_run``, ``reports.pools.load_pools``)
aggregate the seeds.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

from harness.core.store import CONFIG, RunStoreError, identity_diff, write_json_atomic

MARKER = "seeds.json"
KIND = "seeds"


def seed_folder(parent: str | Path, seed: int) -> Path:
    """Where seed ``seed`` of a group lives."""
    return Path(parent) / f"seed-{int(seed)}"


def unit_label(problem_id: str, seed: int) -> str:
    """The name of one problem under one seed, where a group's problems are listed (``p3#seed-1``)."""
    return f"{problem_id}#seed-{int(seed)}"


def unit_seed(label: str) -> int:
    """The seed of a :func:`unit_label` (``p3#seed-1`` -> 1)."""
    return int(label.rsplit("#seed-", 1)[1])


def is_seed_group(path: str | Path) -> bool:
    return (Path(path) / MARKER).is_file()


def parse_seeds(text: str) -> list[int]:
    """``"0,1,2,3"`` or a range ``"0-3"`` -> [0, 1, 2, 3]; duplicates and negatives refused."""
    out: list[int] = []
    for part in (p.strip() for p in str(text).split(",")):
        if not part:
            continue
        lo, dash, hi = part.partition("-")
        try:
            vals = list(range(int(lo), int(hi) + 1)) if dash and lo else [int(part)]
        except ValueError:
            raise ValueError(f"--seeds: expected comma-separated integers or a range like 0-3, got {text!r}") from None
        out += vals
    if not out:
        raise ValueError(f"--seeds: no seed given in {text!r}")
    if any(s < 0 for s in out):
        raise ValueError(f"--seeds: seeds must be >= 0, got {text!r}")
    dup = sorted({s for s in out if out.count(s) > 1})
    if dup:
        raise ValueError(f"--seeds: seed {dup[0]} is listed twice in {text!r}")
    return out


def read_marker(parent: str | Path) -> dict[str, Any]:
    """The marker, checked: one line naming the file and field when it is damaged."""
    path = Path(parent) / MARKER
    try:
        d = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RunStoreError(f"{path}: not a readable seed-group marker ({exc})") from None
    if not isinstance(d, dict) or d.get("kind") != KIND:
        raise RunStoreError(f"{path}: field 'kind': expected {KIND!r}, got {d.get('kind') if isinstance(d, dict) else d!r}")
    seeds = d.get("seeds")
    if not isinstance(seeds, list) or not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds):
        raise RunStoreError(f"{path}: field 'seeds': expected a list of integers, got {seeds!r}")
    if not isinstance(d.get("identity", {}), dict):
        raise RunStoreError(f"{path}: field 'identity': expected an object, got {d.get('identity')!r}")
    return d


def register_seeds(parent: str | Path, seeds: Sequence[int], shared: dict[str, Any]) -> None:
    """Create the group, or add ``seeds`` to it after checking it holds the same run less the seed
    (``shared``: ``RunConfig.identity(seed=False)``).

    Refused (one line naming the differing fields) when the parent already groups another run, or
    when it is itself a run folder."""
    parent = Path(parent)
    if (parent / CONFIG).is_file():
        raise RunStoreError(f"{parent}: is a single run folder (it has {CONFIG}); give --seeds runs their own --out "
                            "folder, which will hold one run per seed")
    grouped = is_seed_group(parent)
    if grouped:
        marker = read_marker(parent)
        diff, a, b = identity_diff(marker.get("identity") or {}, shared)
        if diff:
            detail = "; ".join(f"{k}: {a.get(k)!r} -> {b.get(k)!r}" for k in diff[:5])
            raise RunStoreError(f"{parent / MARKER}: the seed group holds another run (fields {', '.join(diff)} "
                                f"differ: {detail}); use another --out folder, or the same settings with other seeds")
        known = list(marker["seeds"])
    else:
        known = []
    merged = known + [int(s) for s in seeds if int(s) not in known]
    if merged != known or not grouped:
        parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(parent / MARKER, {"kind": KIND, "seeds": merged, "identity": shared})


def seed_runs(parent: str | Path) -> list[tuple[int, Path]]:
    """(seed, folder) of every seed of the group that has a run folder yet, in the marker's order.
    A group none of whose seeds has started is one clear error."""
    marker = read_marker(parent)
    found = [(s, seed_folder(parent, s)) for s in marker["seeds"] if (seed_folder(parent, s) / CONFIG).is_file()]
    if not found:
        raise RunStoreError(f"{parent}: seed group with seeds {marker['seeds']} but no seed folder holds a run yet "
                            "(re-run the `vpo run --seeds` command to start them)")
    return found


def representative(path: str | Path) -> Path:
    """The folder whose config.json describes ``path``: the first seed of a group, else ``path``."""
    return seed_runs(path)[0][1] if is_seed_group(path) else Path(path)
