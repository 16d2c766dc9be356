"""The demo protocol and the trainer read the bundled policies' prompt style and budgets from one place."""
from __future__ import annotations

from pathlib import Path

from vpo_harness.harness.app.demo import demo_config, demo_configs
from vpo_harness.harness.core.models import zoo


def test_demo_protocol_is_the_papers_pool_of_30(tmp_path: Path) -> None:
    multi = demo_config("ck", True, tmp_path / "a", None, 10)
    single = demo_config("ck", False, tmp_path / "b", 5, 10)
    assert (multi.sampling.n, multi.sampling.m, multi.sampling.max_tokens) == (10, 3, 110)
    assert (single.sampling.n, single.sampling.m, single.sampling.max_tokens) == (30, 1, 40)
    assert multi.task.prompt_style == single.task.prompt_style == "compact" and single.task.limit == 5
    assert multi.sampling.ks[-1] == multi.pool_size == single.pool_size == 30


def test_trainer_budgets_are_the_zoo_defaults() -> None:
    from vpo_harness.training.rl import RLConfig

    d = zoo.ZOO["maze-tiny-vpo"].defaults
    assert d is zoo.TINY_MAZE_DEFAULTS
    cfg = RLConfig()
    assert (cfg.max_new_tokens_single, cfg.max_new_tokens_multi, cfg.prompt_style) == (
        d.max_tokens_single, d.max_tokens_multi, d.prompt_style)


def test_demo_only_filter(tmp_path: Path) -> None:
    for name in zoo.BUNDLED_POLICIES:
        (tmp_path / f"maze-tiny-{name}").mkdir()
        (tmp_path / f"maze-tiny-{name}" / "config.json").write_text("{}")
    labels = [lab for lab, _ in demo_configs(tmp_path, tmp_path / "out", None, 8, only=["grpo"])]
    assert labels == ["GRPO"]
    # the optional max@k / multi_rlvr policies were removed with issue 10: asking for one selects nothing
    assert [lab for lab, _ in demo_configs(tmp_path, tmp_path / "out", None, 8, only=["vpo", "max@k"])] == ["VPO"]
    assert len(demo_configs(tmp_path, tmp_path / "out", None, 8, only=["all"])) == len(zoo.BUNDLED_POLICIES) == 2
