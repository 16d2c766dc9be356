"""Where things live: the shared offline data and the user cache.

Everything the harness caches lives under one root, ``$VPO_CACHE`` (else
``$XDG_CACHE_HOME/vpo-harness``, else ``~/.cache/vpo-harness``), one folder per kind:
``models/`` (converted zoo models), ``generations/`` (the generation cache) and ``digests/`` (the
checkpoint file digests the cache key reuses). One variable, so moving the cache is one setting and
no two names can mean different things.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]  # harness/core/paths.py -> the checkout
#: the bundled tiny Maze policies (``hf:maze-tiny-vpo`` ... resolve here through harness.core.models.zoo)
BUNDLED_CHECKPOINTS = REPO_ROOT / "checkpoints"
#: the one variable that moves the cache root
CACHE_ENV = "VPO_CACHE"
#: the older name of the generation cache's own folder: still read, with a one-line note
DEPRECATED_GENERATIONS_ENV = "VPO_CACHE_DIR"
_noted: set[str] = set()


#: the folders that install as vpo_harness.<folder> (setup.py)
NAMESPACED = ("harness", "benchmarks", "search", "training", "reports")


def import_root() -> Path:
    """A folder to put on a child interpreter's PYTHONPATH so that ``vpo_harness`` is this checkout.

    The checkout's folders are installed as ``vpo_harness.<folder>`` (setup.py's package_dir), which no
    PYTHONPATH entry of the checkout itself provides. A child that must run exactly this code (a served
    model, a script in vLLM's own virtualenv, which has no vpo-harness installed) gets this folder:
    ``vpo_harness/`` holding one symlink per top-level folder, made once per checkout under the cache.
    """
    import hashlib

    root = _folder("import-roots") / hashlib.sha1(str(REPO_ROOT).encode()).hexdigest()[:12]
    ns = root / "vpo_harness"
    if all((ns / name).resolve() == REPO_ROOT / name for name in NAMESPACED):
        return root
    ns.mkdir(parents=True, exist_ok=True)
    for name in NAMESPACED:
        link = ns / name
        tmp = ns / f".{name}.{os.getpid()}"
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(REPO_ROOT / name, target_is_directory=True)
        os.replace(tmp, link)  # atomic: concurrent callers each leave a correct link
    return root


def child_pythonpath(env: dict[str, str] | None = None) -> str:
    """PYTHONPATH for a child that must import this checkout (:func:`import_root` first)."""
    rest = (env if env is not None else os.environ).get("PYTHONPATH", "")
    return os.pathsep.join([str(import_root())] + [p for p in rest.split(os.pathsep) if p])


def shared_data_dir() -> Path:
    """Offline data slices: $VPO_SHARED_DATA, else ``../shared/data`` next to the checkout."""
    env = os.environ.get("VPO_SHARED_DATA")
    if env:
        return Path(env)
    return REPO_ROOT.parent / "shared" / "data"


def cache_dir() -> Path:
    """The cache root (see the module docstring)."""
    env = os.environ.get(CACHE_ENV)
    if env:
        p = Path(env)
    else:
        p = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "vpo-harness"
    p.mkdir(parents=True, exist_ok=True)
    return p


def _folder(name: str) -> Path:
    p = cache_dir() / name
    p.mkdir(parents=True, exist_ok=True)
    return p


def generations_dir() -> Path:
    """The generation cache (``vpo cache``): ``generations`` under the root. The older
    ``$VPO_CACHE_DIR`` still points it elsewhere, with a one-line note per process saying to use
    ``$VPO_CACHE`` (the root) instead."""
    old = os.environ.get(DEPRECATED_GENERATIONS_ENV)
    if not old:
        return _folder("generations")
    if DEPRECATED_GENERATIONS_ENV not in _noted:
        _noted.add(DEPRECATED_GENERATIONS_ENV)
        print(f"[vpo] note: ${DEPRECATED_GENERATIONS_ENV} is deprecated; set ${CACHE_ENV} (the cache root, "
              f"which holds generations/) instead", file=sys.stderr)
    p = Path(old)
    p.mkdir(parents=True, exist_ok=True)
    return p


def digests_dir() -> Path:
    """The memo of checkpoint file digests (:mod:`vpo_harness.harness.core.digests`): ``digests`` under the root."""
    return _folder("digests")
