"""Integration tests are deselected by default (fast loop); `--integration` (used by CI) runs everything.

Tests that read the offline data slices (``../shared/data`` or $VPO_SHARED_DATA) fail at once with
where the data is expected when it is missing, instead of falling back to the hub and retrying.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import pytest

from harness.core.paths import shared_data_dir

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


@pytest.fixture(autouse=True, scope="session")
def _session_generation_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Runs made by module- and session-scoped fixtures (set up before any test's own cache below)
    never write to the user's ~/.cache either."""
    before = os.environ.get("VPO_CACHE_DIR")
    os.environ["VPO_CACHE_DIR"] = str(tmp_path_factory.mktemp("vpo-generations-session"))
    yield
    if before is None:
        os.environ.pop("VPO_CACHE_DIR", None)
    else:
        os.environ["VPO_CACHE_DIR"] = before


@pytest.fixture(autouse=True)
def _own_generation_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test gets an empty generation cache of its own (never the user's ~/.cache), so a test
    sees the cache exactly as a fresh machine would and no test depends on what another stored."""
    monkeypatch.setenv("VPO_CACHE_DIR", str(tmp_path_factory.mktemp("vpo-generations")))
