"""Where things live: the shared offline data and the user cache."""
from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]  # harness/core/paths.py -> the checkout
#: the bundled tiny Maze policies (``hf:maze-tiny-vpo`` ... resolve here through harness.core.models.zoo)
BUNDLED_CHECKPOINTS = REPO_ROOT / "checkpoints"


def shared_data_dir() -> Path:
    """Offline data slices: $VPO_SHARED_DATA, else ``../shared/data`` next to the checkout."""
    env = os.environ.get("VPO_SHARED_DATA")
    if env:
        return Path(env)
    return REPO_ROOT.parent / "shared" / "data"


def cache_dir() -> Path:
    """User cache for converted models: $VPO_CACHE, else $XDG_CACHE_HOME/vpo-harness."""
    env = os.environ.get("VPO_CACHE")
    if env:
        p = Path(env)
    else:
        p = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "vpo-harness"
    p.mkdir(parents=True, exist_ok=True)
    return p


def generations_dir() -> Path:
    """The generation cache (``vpo cache``): $VPO_CACHE_DIR, else ``generations`` under :func:`cache_dir`."""
    env = os.environ.get("VPO_CACHE_DIR")
    p = Path(env) if env else cache_dir() / "generations"
    p.mkdir(parents=True, exist_ok=True)
    return p
