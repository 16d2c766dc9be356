"""search/config.py: OpenEvolve YAML for what the flags leave open, flags win, errors name the file."""
from __future__ import annotations

from pathlib import Path

import pytest

from vpo_harness.search.config import build_config, effective_dict, read_yaml


def _build(user: dict, **kw):
    args = dict(task_name="maze", feature_dims=["gold", "diamond"], code=False, iterations=7, seed=3)
    args.update(kw)
    return build_config(user, **args)


def test_yaml_fills_what_flags_leave_open(tmp_path: Path) -> None:
    f = tmp_path / "oe.yaml"
    f.write_text("max_iterations: 999\nrandom_seed: 1\ndatabase:\n  num_islands: 5\n  migration_interval: 7\n"
                 "  feature_dimensions: [completion, avoid_lava]\nllm:\n  temperature: 0.1\n  primary_model: gpt-x\n"
                 "prompt:\n  num_top_programs: 1\n")
    cfg = _build(read_yaml(f))
    assert cfg.database.num_islands == 5 and cfg.database.migration_interval == 7
    assert cfg.database.feature_dimensions == ["completion", "avoid_lava"]
    assert cfg.prompt.num_top_programs == 1
    # the flags own iterations and the seeds derived from --seed; model, server and sampling are
    # the run's settings (tests/search/test_evolve_precedence.py), not OpenEvolve's llm section
    assert cfg.max_iterations == 7
    assert cfg.random_seed != 1 and cfg.database.random_seed == cfg.random_seed
    assert _build({}, seed=4).random_seed != _build({}, seed=3).random_seed
    assert cfg.llm.models == []
    d = effective_dict(cfg)
    assert d["database"]["num_islands"] == 5 and "llm" not in d


def test_defaults_per_task() -> None:
    maze = _build({})
    assert maze.diff_based_evolution is False and maze.language == "text"
    assert maze.database.feature_dimensions == ["gold", "diamond"]
    lcb = _build({}, task_name="livecodebench", feature_dims=["tests_passed", "code_length"], code=True)
    assert lcb.diff_based_evolution is True and lcb.language == "python"


def test_bad_yaml_is_one_line(tmp_path: Path) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text("database:\n  num_islands: [1\n")
    with pytest.raises(ValueError, match=r"bad.yaml: line \d+: not valid YAML"):
        read_yaml(f)
    with pytest.raises(FileNotFoundError, match="no such OpenEvolve config"):
        read_yaml(tmp_path / "missing.yaml")
    with pytest.raises(ValueError, match="OpenEvolve config"):
        _build({"database": {"num_islands": "many"}})
