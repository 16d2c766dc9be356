"""The commit a hub id's revision names in the local Hugging Face hub cache, read offline.

Why: a hub id alone (``Qwen/Qwen3-1.7B``) names whatever its ``main`` branch points at, which moves;
a run's identity and the generation cache key need the commit that is actually loaded. The hub
cache records it without a network call: ``models--ORG--NAME/refs/REVISION`` holds the commit hash
and ``snapshots/COMMIT/`` the files of that commit. ``huggingface_hub`` reads that layout; we only
ask it where ``config.json`` of the revision is and take the snapshot folder's name.
"""
from __future__ import annotations

from pathlib import Path


def local_snapshot(repo_id: str, revision: str | None = None) -> Path | None:
    """The snapshot folder ``revision`` (default ``main``; a commit hash stays itself) resolves to in
    the local hub cache, named by its commit; None when the cache has no snapshot of it (or
    huggingface_hub is missing). Its files are what loading the hub id reads, so they are hashed like
    a local checkpoint's: a file edited inside the snapshot keeps the commit but not the digest."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    repo, _, at = repo_id.partition("@")  # ``org/name@rev`` spells the revision in the id
    try:
        found = try_to_load_from_cache(repo, "config.json", revision=revision or at or None)
    except (ValueError, OSError):  # a malformed id or an unreadable cache: nothing to pin it to
        return None
    return Path(found).parent if isinstance(found, str) else None


def local_commit(repo_id: str, revision: str | None = None) -> str | None:
    """The commit hash of :func:`local_snapshot`, or None."""
    snapshot = local_snapshot(repo_id, revision)
    return snapshot.name if snapshot is not None else None
