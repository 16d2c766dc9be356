"""Where things live: the shared offline data and the user cache.

Everything the harness caches lives under one root, ``$VPO_CACHE`` (else
``$XDG_CACHE_HOME/vpo-harness``, else ``~/.cache/vpo-harness``), one folder per kind:
``models/`` (converted zoo models), ``generations/`` (the generation cache) and ``digests/`` (the
checkpoint file digests the cache key reuses). One variable, so moving the cache is one setting and
no two names can mean different things.
"""
from __future__ import annotations

import logging
import os
from pathlib import Path

_log = logging.getLogger(__name__)  # notes and warnings: the caller decides where they go (harness/core/log.py)

#: the checkout (harness/core/paths.py, links resolved); in a wheel install, the installed
#: ``vpo_harness/`` folder, which holds the same ``checkpoints/`` as package data
REPO_ROOT = Path(__file__).resolve().parents[2]
#: the bundled tiny Maze policies (``hf:maze-tiny-vpo`` ... resolve here through harness.core.models.zoo)
BUNDLED_CHECKPOINTS = REPO_ROOT / "checkpoints"
#: the one variable that moves the cache root
CACHE_ENV = "VPO_CACHE"
#: the older name of the generation cache's own folder: still read, with a one-line note
DEPRECATED_GENERATIONS_ENV = "VPO_CACHE_DIR"
_noted: set[str] = set()


def import_root() -> Path:
    """The folder that holds the ``vpo_harness`` package this process runs: the checkout's root (which
    holds ``vpo_harness/``, links to the top-level folders), or site-packages for a wheel install.

    Read from the package itself, not from this file's resolved path, so it is right whichever way
    the package was found; nothing is written anywhere (a read-only cache root is no obstacle)."""
    import vpo_harness

    if vpo_harness.__file__ is None:  # a namespace from an editable install made before vpo_harness/ existed
        return REPO_ROOT  # (pip install -e . again replaces it); its folders are this checkout's
    return Path(vpo_harness.__file__).resolve().parent.parent


def child_pythonpath(env: dict[str, str] | None = None) -> str:
    """PYTHONPATH for a child that must run this same code (a served model, a driver in vLLM's own
    virtualenv, a test's subprocess): :func:`import_root` first, then ``env``'s own PYTHONPATH (default
    ``os.environ``). The one way the project hands its checkout to a child process."""
    rest = (env if env is not None else os.environ).get("PYTHONPATH", "")
    first = str(import_root())
    return os.pathsep.join([first] + [p for p in rest.split(os.pathsep) if p and p != first])


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
        _log.warning(f"[vpo] note: ${DEPRECATED_GENERATIONS_ENV} is deprecated; set ${CACHE_ENV} (the cache root, "
                     f"which holds generations/) instead")
    p = Path(old)
    p.mkdir(parents=True, exist_ok=True)
    return p


def digests_dir() -> Path:
    """The memo of checkpoint file digests (:mod:`vpo_harness.harness.core.digests`): ``digests`` under the root."""
    return _folder("digests")
