"""The verl plugin on CPU: estimators found through verl's registry (also via the ``verl.plugins`` entry
point in a fresh interpreter) give training/advantages.py's advantages on a batch in verl's format, and
the ``vpo`` reward manager scores real items of every task the way the task itself does."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("verl")
import torch  # noqa: E402

from vpo_harness.harness.core.paths import child_pythonpath  # noqa: E402
from vpo_harness.benchmarks import get_task  # noqa: E402
from vpo_harness.training import advantages as A  # noqa: E402
from vpo_harness.training import rollouts as R  # noqa: E402
from vpo_harness.training import verl_plugin as P  # noqa: E402
from vpo_harness.training.verl_export import VerlExport, problem_row  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("VPO_SHARED_DATA", REPO.parent / "shared" / "data"))


def _registry_fn(name: str):
    from verl.trainer.ppo.core_algos import get_adv_estimator_fn

    return get_adv_estimator_fn(name)


def _verl_batch(R_scores: np.ndarray, lengths: np.ndarray, T: int = 6):
    """token_level_rewards / response_mask / index as verl builds them: the score on the last valid token."""
    B, G = R_scores.shape
    mask = (torch.arange(T)[None, :] < torch.tensor(lengths.reshape(-1))[:, None]).float()
    tlr = torch.zeros(B * G, T)
    tlr[torch.arange(B * G), torch.tensor(lengths.reshape(-1)) - 1] = torch.tensor(R_scores.reshape(-1), dtype=torch.float32)
    uids = np.array([f"uid-{b}" for b in range(B) for _ in range(G)], dtype=object)
    perm = np.random.default_rng(0).permutation(B * G)             # verl's balance_batch reorders rows
    return tlr[perm], mask[perm], uids[perm], perm


@pytest.mark.parametrize("method", A.METHODS)
def test_registry_estimator_equals_advantages_py(method):
    """Random reward tensors -> advantages.py's set reward R per rollout -> verl batch -> registry fn."""
    rng = np.random.default_rng(11)
    B, G, d = 3, 8, 4
    m = 3 if method in A.MULTI_ANSWER else 1
    rewards = rng.random((B, G, m, d)) * (rng.random((B, G, m, 1)) > 0.3)
    rewards[0, :2] = rewards[0, 2]                     # ties inside a group
    W = A.dirichlet_weights(B, 100, d, 1.0, rng)
    row_w = rng.dirichlet(np.ones(d), size=(B, G))
    Rs = {"grpo": A.grpo_rewards, "max_at_k": A.grpo_rewards, "multi_rlvr": A.multi_rlvr_rewards,
          "vpo": lambda r: A.vpo_rewards(r, W), "random_weight": lambda r: A.weighted_rewards(r, row_w),
          "goal_cond": lambda r: A.weighted_rewards(r, row_w)}[method](rewards)
    expected = {"vpo": lambda: A.vpo_advantages(rewards, weights=W)}.get(
        method, lambda: A.compute_advantages(method, rewards, row_weights=row_w))()
    lengths = rng.integers(1, 7, size=(B, G))
    tlr, mask, uids, perm = _verl_batch(Rs, lengths)
    adv, ret = _registry_fn(P.METHOD_TO_ESTIMATOR[method])(token_level_rewards=tlr, response_mask=mask, index=uids,
                                                           config={})
    assert adv.shape == tlr.shape and torch.equal(adv, ret)
    assert torch.all(adv[mask == 0] == 0)
    per_row = (adv * mask).sum(-1) / mask.sum(-1)
    want = expected.reshape(-1)[perm]
    assert np.abs(want).max() > 0.1
    np.testing.assert_allclose(per_row.numpy(), want.astype(np.float32), rtol=1e-5, atol=1e-5)


def test_entry_point_registers_in_a_stock_verl_import(tmp_path):
    """pyproject declares the verl.plugins entry point; with it installed, a bare `import verl` registers
    everything (no VERL_USE_EXTERNAL_MODULES)."""
    eps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["entry-points"]["verl.plugins"]
    dist = tmp_path / "vpo_plugin_probe-0.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: vpo-plugin-probe\nVersion: 0.0\n")
    (dist / "entry_points.txt").write_text("[verl.plugins]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()))
    code = ("import verl\n"
            "from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY as E\n"
            "from verl.experimental.reward_loop.reward_manager import get_reward_manager_cls\n"
            "print(sorted(n for n in E if n in ('vpo','vpo_grpo','multi_rlvr','max_at_k','random_weight','goal_cond')))\n"
            "print(get_reward_manager_cls('vpo').__name__)\n")
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{child_pythonpath()}", "VERL_USE_EXTERNAL_PLUGINS": "auto"}
    env.pop("VERL_USE_EXTERNAL_MODULES", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.strip().splitlines()
    assert lines[-2] == str(sorted(P.ESTIMATORS)) and lines[-1] == "VPORewardManager"


# ---- the reward manager on real items ------------------------------------------------------------------------
class _Tok:
    """Byte tokenizer: ids are UTF-8 bytes + 1, 0 is padding, 1 is the end token (any text round-trips)."""

    eos_token_id = 1

    def encode(self, text: str) -> list[int]:
        return [b + 2 for b in text.encode("utf-8")]

    def decode(self, ids, skip_special_tokens: bool = True) -> str:
        return bytes(int(i) - 2 for i in ids if int(i) > 1).decode("utf-8", errors="replace")


def _manager(estimator: str):
    from omegaconf import OmegaConf
    from verl.experimental.reward_loop.reward_manager import get_reward_manager_cls

    cfg = OmegaConf.create({"algorithm": {"adv_estimator": estimator}})
    return get_reward_manager_cls("vpo")(cfg, _Tok(), None)


def _data_item(row: dict, text: str, uid: str, *, truncate: bool = False, T: int | None = None):
    from verl import DataProto

    tok = _Tok()
    ids = tok.encode(text) + ([] if truncate else [tok.eos_token_id])
    T = T or len(ids) + 3
    ids = ids[:T]
    resp = torch.zeros(1, T, dtype=torch.long)
    resp[0, : len(ids)] = torch.tensor(ids)
    prompt = torch.ones(1, 4, dtype=torch.long)
    att = torch.cat([torch.ones(1, 4), (torch.arange(T) < len(ids)).float()[None]], dim=1).long()
    nt = {k: np.array([v], dtype=object) for k, v in row.items() if k != "prompt"}
    nt["uid"] = np.array([uid], dtype=object)
    return DataProto.from_dict(tensors={"prompts": prompt, "responses": resp, "attention_mask": att},
                               non_tensors=nt)


def _run(manager, data) -> dict:
    """verl awaits run_single on the manager's own event loop (verl.utils.ray_utils.get_event_loop)."""
    return manager.loop.run_until_complete(manager.run_single(data))


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _real_items():
    """(task, problem, method, texts) per task: Maze routes from exact search, the authors' scored outputs
    (MuSiQue, ToolRL), the synthetic EUREQA fixture, LiveCodeBench solutions graded by LCB itself."""
    from vpo_harness.benchmarks.maze import best_route
    from vpo_harness.training.data import task_instance

    out = []
    maze = get_task("maze")
    mp = maze.load("test", limit=1)[0]
    routes = [" ".join(best_route(task_instance(mp), w)) for w in ([1, 1, 0, 1], [1, 0, 1, 1], [1, 0, 0, 0])]
    chains = [routes, [routes[0], routes[0], routes[2]], [routes[1]], ["", "UP UP UP", routes[2]]]
    out.append((maze, mp, "vpo", ["".join(f"<route_{i}>{a}</route_{i}>" for i, a in enumerate(c, 1)) for c in chains]))
    mus = get_task("musique")
    ms = _jsonl(SHARED / "musique" / "authors_scores.jsonl")
    pid = ms[0]["id"]
    prob = next(p for p in mus.load("validation") if p.id == pid)
    texts = [r["text"] for r in ms if r["id"] == pid]
    out.append((mus, prob, "multi_rlvr",
                ["".join(f"<response_{i}>{t}</response_{i}>" for i, t in enumerate(texts[j:j + 3], 1))
                 for j in range(0, min(len(texts), 4))]))
    tool = get_task("toolrl")
    ts = [r for r in _jsonl(SHARED / "toolrl" / "authors_scores.jsonl") if r["id"] == "toolrl-test-0"]
    out.append((tool, tool.load("test", limit=1)[0], "grpo", [r["text"] for r in ts]))
    eu = get_task("eureqa")
    ep = eu.load("test", path=str(REPO / "tests" / "benchmarks" / "fixtures" / "eureqa_synthetic.jsonl"), limit=1)[0]
    gold = ep.data["entities"]
    tags = ["A", "B", "C", "D", "E"]
    ans = ["".join(f"<entity_{t}>{g}</entity_{t}>" for t, g in zip(tags, gold)),
           "".join(f"<entity_{t}>{g}</entity_{t}>" for t, g in zip(tags[:2], gold)), "no idea"]
    out.append((eu, ep, "max_at_k", ans))
    lcb = get_task("livecodebench", workers=2)
    sols = _jsonl(SHARED / "livecodebench" / "graded_solutions.jsonl")
    probs = {p.id: p for p in lcb.load("all")}
    good = next(s for s in sols if s["source_verdict"] and s["question_id"] in probs)
    bad = next(s for s in sols if not s["source_verdict"] and s["question_id"] == good["question_id"])
    out.append((lcb, probs[good["question_id"]], "vpo_grpo_single",
                [f"```python\n{good['code']}\n```", f"```python\n{bad['code']}\n```", "no code"]))
    return out


@pytest.mark.integration
def test_reward_manager_scores_real_items_of_every_task():
    for task, problem, method, texts in _real_items():
        method = "grpo" if method == "vpo_grpo_single" else method
        cfg = VerlExport(task=task.name, method=method, m=3, K=64, seed=5)
        row = problem_row(task, problem, cfg, 0)
        manager = _manager(P.METHOD_TO_ESTIMATOR[method])
        m = 3 if method in A.MULTI_ANSWER else 1
        Rs = []
        for i, text in enumerate(texts):
            res = _run(manager, _data_item(row, text, uid="g0"))
            answers = task.parse(text, m if m > 1 else None)
            r = task.rewards(problem, answers)
            keys = [task.dedup_key(problem, a, ri) if a is not None else None for a, ri in zip(answers, r)]
            want = A.dedupe_chains(r[None, None], [[keys]])[0, 0] if m > 1 else r
            got = np.array(json.loads(res["reward_extra_info"]["reward_vectors"]))
            np.testing.assert_allclose(got, want, atol=1e-6, err_msg=f"{task.name} text {i}")
            W = P.rollout_weights(row["extra_info"], "g0", want.shape[-1])
            expect_R = {"vpo": lambda: A.vpo_rewards(want[None, None], W[None])[0, 0],
                        "multi_rlvr": lambda: A.multi_rlvr_rewards(want[None, None])[0, 0]}.get(
                method, lambda: A.grpo_rewards(want[None, None])[0, 0])()
            assert res["reward_score"] == pytest.approx(float(expect_R), abs=1e-9)
            Rs.append(res["reward_score"])
        assert max(Rs) > min(Rs), f"{task.name}: every text scored the same ({Rs})"
        if hasattr(task, "close"):
            task.close()


def test_truncated_rollout_scores_zero_and_method_mismatch_is_refused():
    from vpo_harness.benchmarks.maze import best_route
    from vpo_harness.training.data import task_instance

    maze = get_task("maze")
    p = maze.load("test", limit=1)[0]
    text = "<route_1>" + " ".join(best_route(task_instance(p), [1, 1, 1, 1])) + "</route_1>"
    row = problem_row(maze, p, VerlExport(method="vpo"), 0)
    ok = _run(_manager("vpo"), _data_item(row, text, "u"))
    assert ok["reward_score"] > 0
    cut = _run(_manager("vpo"), _data_item(row, text, "u", truncate=True, T=len(text)))
    assert cut["reward_score"] == 0.0 and cut["reward_extra_info"]["truncated"] == 1.0
    with pytest.raises(ValueError, match="exported for method 'vpo'"):
        _run(_manager("vpo_grpo"), _data_item(row, text, "u"))


def test_vpo_weights_are_shared_by_a_group_and_differ_between_groups():
    info = {"K": 50, "alpha": 1.0, "seed": 3}
    a, b, c = (P.rollout_weights(info, u, 4) for u in ("x", "x", "y"))
    assert np.array_equal(a, b) and not np.allclose(a, c)
    assert np.allclose(a.sum(-1), 1.0)
    assert R.uid_seed("x", 3) == R.uid_seed("x", 3) != R.uid_seed("x", 4)


@pytest.mark.parametrize("method", ["vpo", "grpo"])
def test_launch_overrides_compose_with_verls_own_config(method):
    """Every override names a real key of verl's ppo_trainer config and selects our registered parts."""
    from hydra import compose, initialize_config_dir
    from verl.experimental.reward_loop.reward_manager import get_reward_manager_cls
    from verl.trainer.ppo.core_algos import get_adv_estimator_fn

    import verl
    from vpo_harness.training.verl_export import VerlLaunch, overrides

    cdir = str(Path(verl.__file__).parent / "trainer" / "config")
    with initialize_config_dir(config_dir=cdir, version_base=None):
        cfg = compose(config_name="ppo_trainer", overrides=overrides(VerlLaunch(method=method, steps=10, nnodes=4)))
    assert cfg.trainer.nnodes == 4 and cfg.actor_rollout_ref.rollout.n == 8
    assert get_adv_estimator_fn(cfg.algorithm.adv_estimator) is P.ESTIMATOR_FNS[P.METHOD_TO_ESTIMATOR[method]]
    assert get_reward_manager_cls(cfg.reward.reward_manager.name).__name__ == "VPORewardManager"


def test_plugin_import_failure_is_a_warning_in_a_stock_verl_import(tmp_path):
    """verl logs a failed entry point at debug level; the plugin itself says it at WARNING."""
    eps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["entry-points"]["verl.plugins"]
    dist = tmp_path / "vpo_plugin_probe-0.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: vpo-plugin-probe\nVersion: 0.0\n")
    (dist / "entry_points.txt").write_text("[verl.plugins]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()))
    # a `vpo_harness` ahead of the checkout's whose `benchmarks` fails to import (a node without the task
    # dependencies); every other layer is the checkout's, through the package's search path
    real = REPO / "vpo_harness"
    broken = tmp_path / "vpo_harness" / "benchmarks"
    broken.mkdir(parents=True)
    (tmp_path / "vpo_harness" / "__init__.py").write_text(f"__path__ = [__path__[0], {str(real)!r}]\n")
    (broken / "__init__.py").write_text("raise ImportError('probe: a node without the task dependencies')\n")
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{child_pythonpath()}", "VERL_USE_EXTERNAL_PLUGINS": "auto"}
    env.pop("VERL_USE_EXTERNAL_MODULES", None)
    code = ("import verl\nfrom verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY as E\n"
            "print('vpo' in E)\n")
    # cwd: `python -c` puts the working directory first on sys.path, ahead of the shadowing folder
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300,
                         cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "False"
    warn = [line for line in out.stderr.splitlines() if "vpo verl plugin" in line]
    assert warn and warn[0].startswith("WARNING") and "probe: a node without" in warn[0] and "NOT registered" in warn[0]
