"""The commit a hub id's revision names in the local Hugging Face hub cache, read offline.

Why: a hub id alone (``Qwen/Qwen3-1.7B``) names whatever its ``main`` branch points at, which moves;
a run's identity and the generation cache key need the commit that is actually loaded. The hub
cache records it without a network call: ``models--ORG--NAME/refs/REVISION`` holds the commit hash
and ``snapshots/COMMIT/`` the files of that commit. ``huggingface_hub`` reads that layout; we only
ask it where ``config.json`` of the revision is and take the snapshot folder's name.
"""
from __future__ import annotations

from pathlib import Path


def local_commit(repo_id: str, revision: str | None = None) -> str | None:
    """The commit hash ``revision`` (default ``main``; a commit hash stays itself) resolves to in the
    local hub cache, or None when the cache has no snapshot of it (or huggingface_hub is missing)."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    repo, _, at = repo_id.partition("@")  # ``org/name@rev`` spells the revision in the id
    try:
        found = try_to_load_from_cache(repo, "config.json", revision=revision or at or None)
    except (ValueError, OSError):  # a malformed id or an unreadable cache: nothing to pin it to
        return None
    return Path(found).parent.name if isinstance(found, str) else None
