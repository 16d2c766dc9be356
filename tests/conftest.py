"""Integration tests are deselected by default (fast loop); `--integration` (used by CI) runs everything.

Tests that read the offline data slices (``../shared/data`` or $VPO_SHARED_DATA) fail at once with
where the data is expected when it is missing, instead of falling back to the hub and retrying.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import pytest

from vpo_harness.harness.core.paths import child_pythonpath, shared_data_dir

# pytest's ``pythonpath = ["."]`` (pyproject.toml) puts this checkout first for the tests themselves;
# the processes they start (``python -m vpo_harness...``, served models, scripts) get it here, so a
# second checkout installed in the same Python is never the one a test runs
os.environ["PYTHONPATH"] = child_pythonpath()

# the library logs its notes and warnings (harness/core/log.py); tests read them on stderr as a user of
# the `vpo` command does, so the test process sends them there as the command does
from vpo_harness.harness.core.log import to_terminal  # noqa: E402

to_terminal()

_SHARED_MARKS = ("shared_data_dir(", '"shared"')


def _needs_shared(item: pytest.Item) -> bool:
    path = Path(str(item.fspath))
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return False
    return any(m in text for m in _SHARED_MARKS)


def pytest_report_header(config: pytest.Config) -> str:
    where = shared_data_dir()
    state = "found" if where.is_dir() else "MISSING: tests that read it fail at once (set VPO_SHARED_DATA)"
    return f"vpo shared data: {where} ({state})"


def pytest_runtest_setup(item: pytest.Item) -> None:
    where = shared_data_dir()
    if not where.is_dir() and _needs_shared(item):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
        pytest.fail(f"needs the offline data slices at {where}, which does not exist: put the shared data "
                    f"folder next to the checkout (../shared/data) or set VPO_SHARED_DATA=/path/to/shared/data "
                    f"(see CONTRIBUTING.md)", pytrace=False)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--integration", action="store_true", help="also run tests marked integration")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--integration"):
        return
    keep, drop = [], []
    for item in items:
        (drop if item.get_closest_marker("integration") else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def _cache_root(tmp_path_factory: pytest.TempPathFactory, name: str) -> str:
    """A fresh cache root whose ``models/`` is the user's own: converted zoo models (minutes to
    build, written atomically under a lock) are shared, everything else starts empty."""
    root = tmp_path_factory.mktemp(name)
    (root / "models").symlink_to(_USER_MODELS, target_is_directory=True)
    return str(root)


_USER_MODELS: Path = Path()


@pytest.fixture(autouse=True, scope="session")
def _session_generation_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Runs made by module- and session-scoped fixtures (set up before any test's own cache below)
    never write to the user's ~/.cache either."""
    global _USER_MODELS
    from vpo_harness.harness.core import paths

    before = os.environ.get(paths.CACHE_ENV)
    os.environ.pop(paths.DEPRECATED_GENERATIONS_ENV, None)
    _USER_MODELS = paths.cache_dir() / "models"
    _USER_MODELS.mkdir(parents=True, exist_ok=True)
    os.environ[paths.CACHE_ENV] = _cache_root(tmp_path_factory, "vpo-cache-session")
    yield
    if before is None:
        os.environ.pop(paths.CACHE_ENV, None)
    else:
        os.environ[paths.CACHE_ENV] = before


@pytest.fixture(autouse=True)
def _own_generation_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test gets an empty cache root of its own (never the user's ~/.cache), so a test sees
    the generation cache and the digest memo exactly as a fresh machine would and no test depends
    on what another stored."""
    monkeypatch.setenv("VPO_CACHE", _cache_root(tmp_path_factory, "vpo-cache"))
