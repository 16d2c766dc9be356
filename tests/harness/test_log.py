"""Library notes and warnings go through logging (harness/core/log.py): the `vpo` command shows them on
stderr exactly as the lines they were when printed, and a caller of the library can silence or
capture them, which a print could not offer."""
from __future__ import annotations

import logging

import pytest

from vpo_harness.harness.core import paths

NOTE = "[vpo] note: $VPO_CACHE_DIR is deprecated; set $VPO_CACHE (the cache root, which holds generations/) instead"


@pytest.fixture
def deprecated_env(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("VPO_CACHE_DIR", str(tmp_path / "old"))
    monkeypatch.setattr(paths, "_noted", set())


def test_on_the_terminal_the_line_is_unchanged(deprecated_env, capsys: pytest.CaptureFixture[str]) -> None:
    paths.generations_dir()  # the test process sends records to stderr as the CLI does (tests/conftest.py)
    assert capsys.readouterr().err == NOTE + "\n"


def test_a_caller_can_silence_it(deprecated_env, capsys: pytest.CaptureFixture[str]) -> None:
    logger = logging.getLogger("vpo_harness")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        paths.generations_dir()
    finally:
        logger.setLevel(level)
    assert capsys.readouterr().err == ""


def test_a_caller_can_capture_it(deprecated_env) -> None:
    got: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = got.append  # type: ignore[method-assign]
    logging.getLogger("vpo_harness").addHandler(handler)
    try:
        paths.generations_dir()
    finally:
        logging.getLogger("vpo_harness").removeHandler(handler)
    assert [(r.name, r.levelname, r.getMessage()) for r in got] == [("vpo_harness.harness.core.paths", "WARNING", NOTE)]
