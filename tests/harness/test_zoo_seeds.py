"""Zoo names of the trained Maze row: ``maze-tiny-<method>`` (seed 0) and ``maze-tiny-<method>@<seed>``."""
from __future__ import annotations

import json

import pytest

from vpo_harness.harness.core import paths
from vpo_harness.harness.core.models import zoo


def _make(folder):
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(folder.name.encode())


def test_seed_names_resolve_to_their_folders(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "BUNDLED_CHECKPOINTS", tmp_path)
    for method in (*zoo.ROW_METHODS, zoo.WARM_START):
        for seed in zoo.TRAINING_SEEDS:
            _make(tmp_path / zoo.policy_folder_name(method, seed))
    assert zoo.resolve("maze-tiny-warm@4") == str(tmp_path / "maze-tiny-warm-s4")
    assert zoo.resolve("maze-tiny-max_at_k@2") == str(tmp_path / "maze-tiny-max_at_k-s2")
    assert zoo.resolve("maze-tiny-vpo@1") == str(tmp_path / "maze-tiny-vpo-s1")
    assert zoo.resolve("maze-tiny-vpo") == zoo.resolve("maze-tiny-vpo@0") == str(tmp_path / "maze-tiny-vpo")
    assert zoo.resolve("maze-tiny-grpo") == str(tmp_path / "maze-tiny-grpo")
    # one spelling per model for run identity, and every seed its own weights
    assert zoo.canonical_model(str(tmp_path / "maze-tiny-vpo-s1")) == "maze-tiny-vpo@1"
    assert zoo.canonical_model(str(tmp_path / "maze-tiny-vpo")) == "maze-tiny-vpo"
    assert zoo.fingerprint("maze-tiny-vpo@1") != zoo.fingerprint("maze-tiny-vpo@2")
    assert zoo.generation_defaults("hf:maze-tiny-multi_rlvr@2")[0] == zoo.TINY_MAZE_DEFAULTS
    rows = zoo.trained_policies()
    # the row (four methods x training seeds 0-4) and each seed's warm start
    assert len(rows) == 25 and all(r["present"] for r in rows)
    assert {(r["method"], r["seed"]) for r in rows} == {(m, s) for m in (*zoo.ROW_METHODS, zoo.WARM_START)
                                                        for s in zoo.TRAINING_SEEDS}


def test_a_missing_seed_says_how_to_train_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(paths, "BUNDLED_CHECKPOINTS", tmp_path)
    with pytest.raises(FileNotFoundError) as err:
        zoo.resolve("maze-tiny-multi_rlvr@1")
    msg = str(err.value)
    assert "\n" not in msg and "maze-tiny-multi_rlvr-s1" in msg
    assert "scripts/train_zoo.py --methods multi_rlvr --seeds 1" in msg


def test_ls_models_lists_method_seed_and_presence(tmp_path, monkeypatch, capsys):
    from vpo_harness.harness.app.cli import main

    monkeypatch.setattr(paths, "BUNDLED_CHECKPOINTS", tmp_path)
    _make(tmp_path / "maze-tiny-vpo-s2")
    (tmp_path / "maze-tiny-vpo-s1").mkdir()            # a folder without weights is not a policy
    assert main(["ls", "--models"]) == 0
    out = capsys.readouterr().out.splitlines()
    line = next(x for x in out if x.startswith("maze-tiny-vpo@2 "))
    assert line.split()[1:4] == ["vpo", "2", "present"]
    other = next(x for x in out if x.startswith("maze-tiny-grpo@1 "))
    assert "missing" in other and "--methods grpo --seeds 1" in other
    assert "missing" in next(x for x in out if x.startswith("maze-tiny-vpo@1 "))
    assert main(["ls", "--models", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["present"] for r in rows].count(True) == 1


def test_ls_models_says_which_present_policies_come_from_an_earlier_protocol(tmp_path, monkeypatch, capsys):
    """The bundled seed-42 policies hold the seed-0 names until train_zoo.py retrains them: the listing
    says so instead of a bare "present"; a policy whose record names its own seed gets no note."""
    from vpo_harness.harness.app.cli import main

    monkeypatch.setattr(paths, "BUNDLED_CHECKPOINTS", tmp_path)
    for folder, seed in (("maze-tiny-vpo", 42), ("maze-tiny-vpo-s2", 2)):
        _make(tmp_path / folder)
        (tmp_path / folder / "vpo_training.json").write_text(json.dumps({"config": {"seed": seed}}))
    assert main(["ls", "--models"]) == 0
    out = capsys.readouterr().out.splitlines()
    old = next(x for x in out if x.startswith("maze-tiny-vpo "))
    assert "present (an earlier protocol's run, training seed 42" in old and "--methods vpo --seeds 0" in old
    assert next(x for x in out if x.startswith("maze-tiny-vpo@2 ")).rstrip().endswith("present")
