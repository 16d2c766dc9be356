"""Bad data files are one line naming the file (and line): non-UTF-8, empty, duplicate problem ids."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from vpo_harness.benchmarks import DataError, get_task
from vpo_harness.benchmarks.rowfiles import read_rows
from vpo_harness.harness.app.cli import main

from vpo_harness.harness.core.paths import shared_data_dir

LCB = shared_data_dir() / "livecodebench" / "code_generation_lite.v5v6.public.jsonl"
MUSIQUE = shared_data_dir() / "musique" / "musique_ans_v1.0_dev.sample.jsonl"


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
def test_non_utf8_file_names_file_and_line(tmp_path: Path, suffix: str) -> None:
    f = tmp_path / f"data{suffix}"
    f.write_bytes(b'{"id": "a"}\n{"id": "caf\xe9"}\n')  # Latin-1, not UTF-8
    with pytest.raises(DataError, match=rf"data{suffix}, line 2: not UTF-8 text \(byte 0xe9\)"):
        read_rows(f)


@pytest.mark.parametrize("content", [b"", b"\n\n", b"[]"])
def test_empty_file_is_an_error(tmp_path: Path, content: bytes) -> None:
    f = tmp_path / "empty.json"
    f.write_bytes(content)
    with pytest.raises(DataError, match=r"empty\.json: empty data file"):
        read_rows(f)


def test_duplicate_musique_ids_name_file_and_both_lines(tmp_path: Path, capsys) -> None:
    lines = MUSIQUE.read_text(encoding="utf-8").splitlines()[:3]
    f = tmp_path / "dup.jsonl"
    f.write_text("\n".join([lines[0], lines[1], lines[0]]) + "\n", encoding="utf-8")  # merged silently before
    pid = json.loads(lines[0])["id"]
    with pytest.raises(DataError, match=rf"dup\.jsonl, line 3, field 'id': duplicate problem id '{pid}' "
                                        rf"\(first at .*dup\.jsonl line 1\)"):
        get_task("musique").load("test", path=str(f))
    rc = main(["run", "--task", "musique", "--model", "mock:moves", "--data-path", str(f), "-n", "1",
               "--out", str(tmp_path / "r"), "--no-progress"])
    assert rc != 0 and "duplicate problem id" in _one_line(capsys)


def test_duplicate_livecodebench_ids_are_an_error(tmp_path: Path) -> None:
    lines = LCB.read_text(encoding="utf-8").splitlines()[:2]
    f = tmp_path / "test.jsonl"
    f.write_text("\n".join([lines[0], lines[1], lines[1]]) + "\n", encoding="utf-8")  # dropped silently before
    with pytest.raises(DataError, match=r"test\.jsonl, line 3, field 'question_id': duplicate problem id"):
        get_task("livecodebench").load("all", path=str(f))


def test_cli_non_utf8_data_is_one_line(tmp_path: Path, capsys) -> None:
    f = tmp_path / "bad.jsonl"
    f.write_bytes(MUSIQUE.read_bytes().split(b"\n")[0] + b"\n\xff\xfe\n")
    rc = main(["run", "--task", "musique", "--model", "mock:moves", "--data-path", str(f), "-n", "1",
               "--out", str(tmp_path / "r"), "--no-progress"])
    line = _one_line(capsys)
    assert rc != 0 and "bad.jsonl, line 2: not UTF-8" in line


def test_runner_refuses_duplicate_ids_given_directly(tmp_path: Path) -> None:
    from vpo_harness.harness.eval.runner import RunConfig, run
    from tests.harness.scripted import ScriptedBackend

    probs = get_task("maze").load("test", limit=2)
    cfg = RunConfig.of(task="maze", model="scripted:x", n=1, ks=(1,), out=str(tmp_path / "r"), progress=False)
    with pytest.raises(ValueError, match="appears 2 times"):
        run(cfg, backend=ScriptedBackend(), problems=[probs[0], probs[1], probs[0]])
