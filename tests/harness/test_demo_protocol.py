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


def test_demo_only_filter_and_training_seeds(tmp_path: Path) -> None:
    """--only picks methods of the paper's row (any usual spelling, in the paper's order); every
    (method, training seed) without a policy folder is one line naming the command that trains it."""
    import pytest

    from vpo_harness.harness.app.demo import parse_methods

    for method in (*zoo.ROW_METHODS, zoo.WARM_START):
        for ts in (0, 2):
            folder = tmp_path / zoo.policy_folder_name(method, ts)
            folder.mkdir()
            (folder / "config.json").write_text("{}")
    runs, missing = demo_configs(tmp_path, tmp_path / "out", None, 8, only=["grpo"])
    assert [r.label for r in runs] == ["GRPO", "warm start (30 x 1)"] and not missing
    runs, _ = demo_configs(tmp_path, tmp_path / "out", None, 8, only=["vpo,max@k"])
    assert [r.method for r in runs] == ["max_at_k", "vpo", "warm-m1", "warm-m3"]
    runs, missing = demo_configs(tmp_path, tmp_path / "out", None, 8, train_seeds=(0, 1, 2))
    runs = [r for r in runs if r.method in zoo.ROW_METHODS]
    assert [(r.method, r.train_seed) for r in runs] == [(m, s) for m in zoo.ROW_METHODS for s in (0, 2)]
    assert len(missing) == 5 and all("@1" in ln and "--seeds 1" in ln for ln in missing)
    multi = {r.method: r.cfg.sampling.m for r in runs}
    assert multi == {"grpo": 1, "max_at_k": 1, "multi_rlvr": 3, "vpo": 3}  # 10 x 3 for the set methods
    assert {Path(r.cfg.execution.out).name for r in runs if r.method == "vpo"} == {"maze-tiny-vpo", "maze-tiny-vpo@2"}
    assert parse_methods(None) == parse_methods(["all"]) == list(zoo.ROW_METHODS)
    with pytest.raises(ValueError, match="--only: unknown method 'ppo'"):
        parse_methods(["vpo", "ppo"])


def test_card_evaluation_is_the_policys_own_demo_row(tmp_path: Path) -> None:
    """`vpo demo --write-cards` rewrites only the card's evaluation section, from the stored run: the
    numbers are the run's own, the paper's value of the method sits beside them, the rest of the card
    is kept."""
    from vpo_harness.harness.app.demo import write_card_evaluation
    from vpo_harness.harness.core.config import RunConfig
    from vpo_harness.harness.core.results import load_run
    from vpo_harness.harness.eval.runner import run
    from vpo_harness.training.model_card import EVAL_HEAD
    from tests.fakes.scripted_backend import ScriptedBackend

    cfg = RunConfig.of(task="maze", model="scripted:x", limit=3, n=4, ks=(1, 2, 4), out=str(tmp_path / "run"),
                       progress=False)
    folder = run(cfg, backend=ScriptedBackend())
    ck = tmp_path / "ck"
    ck.mkdir()
    (ck / "README.md").write_text(f"# card\n\nkept above\n\n{EVAL_HEAD}: old)\n\n(not evaluated yet)\n\n"
                                  "## Notes\n\nkept below\n")
    write_card_evaluation(ck, folder, "vpo demo --seeds 0,1,2", "max_at_k", 2)
    card = (ck / "README.md").read_text()
    best1 = load_run(folder).summary.best[1]
    assert "kept above" in card and "## Notes\n\nkept below" in card and "(not evaluated yet)" not in card
    row = next(ln for ln in card.splitlines() if ln.startswith("| Max-at-K |"))
    assert f"| {best1.mean:.3f} ± {best1.stderr:.3f} |" in row and row.endswith("| 0.577 |")
    assert "| 2 |" in row and "`vpo demo --seeds 0,1,2`" in card
