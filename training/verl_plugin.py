"""verl plugin: VPO and its baselines as verl advantage estimators, and a reward manager that scores
rollouts with this project's benchmarks. No fork: verl (>= 0.9) imports this module through the
``verl.plugins`` entry point declared in pyproject.toml (or ``VERL_USE_EXTERNAL_MODULES=vpo_harness.training.verl_plugin``).

    algorithm.adv_estimator=vpo  reward.reward_manager.name=vpo

How the reward vector reaches the estimator. verl hands a registered estimator only the token-level
rewards, the response mask and the group ids (``index``); reward vectors cannot travel that way. So the
work is split at the one place verl allows it:

- the reward manager ``vpo`` scores each rollout with the task (parse -> reward matrix (m, d) -> zero
  rows for a truncated rollout -> duplicates removed) and returns the method's set reward R, the scalar
  ``training/advantages.py`` z-scores (VPO: mean over K weights of the best answer's w . r, with the K
  weights drawn from a seed derived from the rollout's group uid, so the G rollouts of a prompt share
  them in whatever process scores them); the reward vectors, task scalar and unique-answer count go to
  ``reward_extra_info`` for logging;
- the estimators (``vpo``, ``vpo_grpo``, ``multi_rlvr``, ``max_at_k``, ``random_weight``,
  ``goal_cond``) group R by uid and apply advantages.py's last step (group z-score; max@k's
  coefficients), broadcast over the response tokens.

Each data row (``vpo export-verl``) carries its task, problem and method settings in ``extra_info``,
so the reward manager needs no extra configuration. verl's own ``grpo`` is special-cased by verl and
never reaches a registry, hence our GRPO is ``vpo_grpo``.
"""
from __future__ import annotations

import json
import logging
from collections import OrderedDict
from typing import Any

log = logging.getLogger(__name__)


def _warn_failed(stage: str, exc: BaseException) -> None:
    """verl's plugin loader logs a failed entry point at debug level only, so a node where this module
    cannot import would show nothing until verl reports an unknown estimator: say it at WARNING, in
    every process that imports verl (the driver, the TaskRunner, each reward worker)."""
    log.warning("vpo verl plugin (vpo_harness.training.verl_plugin) failed to %s: %s: %s; the estimators %s and "
                "reward.reward_manager.name=vpo are NOT registered in this process", stage, type(exc).__name__, exc,
                "vpo, vpo_grpo, multi_rlvr, max_at_k, random_weight, goal_cond")


try:
    import numpy as np

    from vpo_harness.benchmarks import get_task
    from vpo_harness.benchmarks.base import Benchmark
    from vpo_harness.training import advantages as A
    from vpo_harness.training import rollouts as R
except Exception as _exc:  # noqa: BLE001 - any import failure leaves verl without our parts
    _warn_failed("import", _exc)
    raise

#: verl estimator name -> our method
ESTIMATORS: dict[str, str] = {"vpo": "vpo", "vpo_grpo": "grpo", "multi_rlvr": "multi_rlvr", "max_at_k": "max_at_k",
                              "random_weight": "random_weight", "goal_cond": "goal_cond"}
METHOD_TO_ESTIMATOR = {v: k for k, v in ESTIMATORS.items()}
REWARD_MANAGER = "vpo"


# ---- the set reward of one rollout (what the reward manager returns) -----------------------------------------
def rollout_weights(info: dict[str, Any], uid: Any, d: int) -> np.ndarray:
    """The K weights (K, d) of a rollout's group: a pure function of the group uid and the run seed."""
    rng = np.random.default_rng(R.uid_seed(uid, int(info.get("seed", 0))))
    draw = A.sobol_weights if info.get("sobol") else A.dirichlet_weights
    return draw(1, int(info.get("K", 100)), d, float(info.get("alpha", 1.0)), rng)[0]


def set_reward(method: str, rewards: np.ndarray, info: dict[str, Any], uid: Any, salt: str = "") -> float:
    """R of one rollout from its deduplicated reward matrix (m, d): advantages.py's reward functions on a
    batch of one. ``salt`` (the response text) gives random weighting its per-rollout hidden weights."""
    r = np.asarray(rewards, dtype=float)[None, None]
    d = r.shape[-1]
    if method in ("grpo", "max_at_k"):
        return float(A.grpo_rewards(r)[0, 0])
    if method == "vpo":
        return float(A.vpo_rewards(r, rollout_weights(info, uid, d)[None])[0, 0])
    if method == "multi_rlvr":
        return float(A.multi_rlvr_rewards(r)[0, 0])
    if method == "goal_cond":
        w = np.asarray(info.get("goal_weights") or [], dtype=float)
        if w.shape != (d,):
            raise ValueError(f"goal_cond row needs extra_info.goal_weights of length {d}, got {w.shape}")
        return float(A.weighted_rewards(r, w[None, None])[0, 0])
    if method == "random_weight":
        rng = np.random.default_rng(R.uid_seed(f"{uid}|{salt}", int(info.get("seed", 0))))
        w = rng.dirichlet(np.full(d, float(info.get("alpha", 1.0))))
        return float(A.weighted_rewards(r, w[None, None])[0, 0])
    raise ValueError(f"unknown method {method!r}")


class _Tasks:
    """Task instances by (name, options), kept per process (code tasks hold a sandbox pool)."""

    def __init__(self, size: int = 8):
        self._cache: OrderedDict[str, Benchmark] = OrderedDict()
        self.size = size

    def get(self, name: str, options: dict[str, Any]) -> Benchmark:
        key = json.dumps([name, options], sort_keys=True)
        if key not in self._cache:
            self._cache[key] = get_task(name, **options)
            while len(self._cache) > self.size:
                _, old = self._cache.popitem(last=False)
                if hasattr(old, "close"):
                    old.close()
        self._cache.move_to_end(key)
        return self._cache[key]


TASKS = _Tasks()


def _info_dict(x: Any) -> dict[str, Any]:
    if isinstance(x, str):
        return json.loads(x)
    return dict(x or {})


def score_item(info: dict[str, Any], response: str, *, truncated: bool, uid: Any,
               estimator: str | None = None) -> dict[str, Any]:
    """Reward of one verl rollout: ``{"reward_score": R, "reward_extra_info": {...}}``.

    ``info`` is the row's extra_info (task, task_args, problem, method, m, K, alpha, sobol, seed,
    truncated_reward, goal_weights). ``estimator`` is ``algorithm.adv_estimator``: when it is one of
    ours it must match the method the data was exported for (the prompt format depends on it).
    """
    method = info["method"]
    if estimator in ESTIMATORS and ESTIMATORS[estimator] != method:
        raise ValueError(f"algorithm.adv_estimator={estimator} but the data was exported for method {method!r} "
                         f"(use adv_estimator={METHOD_TO_ESTIMATOR[method]} or re-export with --method)")
    task = TASKS.get(info["task"], _info_dict(info.get("task_args")))
    problem = R.problem_from_json(info["problem"])
    m = R.answers_per_rollout(method, int(info.get("m", 3)))
    sb = R.score_rollouts(task, [problem], [response], m=m, truncated=[truncated],
                          truncated_reward=info.get("truncated_reward", "zero"), dedup=R.is_multi(method))
    d = int(sb.d[0])
    rew = set_reward(method, sb.deduped[0, :, :d], info, uid, salt=response)
    raw = sb.raw[0, :, :d]
    extra: dict[str, Any] = {
        "task_scalar": float(np.mean(task.scalar(raw))),
        "best_scalar": float(np.max(task.scalar(raw))),
        "n_unique": int(sb.n_unique[0]),
        "truncated": float(truncated),
        "reward_vectors": json.dumps(np.round(sb.deduped[0, :, :d], 6).tolist()),
    }
    if not callable(getattr(task, "components_for", None)):     # fixed d: one column per component
        for j, name in enumerate(task.component_names):
            extra[f"r_{name}"] = float(raw[:, j].mean())
    return {"reward_score": rew, "reward_extra_info": extra}


# ---- estimators: group R by uid, then advantages.py's last step --------------------------------------------------
def group_ids(index: Any) -> tuple[np.ndarray, list[np.ndarray]]:
    """Rows of each group, groups in order of first appearance (verl's index: one uid per prompt)."""
    idx = np.asarray(index, dtype=object)
    order: dict[Any, list[int]] = {}
    for i, u in enumerate(idx.tolist()):
        order.setdefault(u, []).append(i)
    rows = [np.array(v) for v in order.values()]
    return idx, rows


def advantages_from_set_rewards(method: str, scores: np.ndarray, index: Any, k: int | None = None) -> np.ndarray:
    """(bs,) advantages from per-rollout set rewards R: advantages.py's group normalisation of the method
    (VPO: population z-score; GRPO family: Bessel-corrected), or max@k's coefficients."""
    _, rows = group_ids(index)
    out = np.zeros(len(scores))
    for r in rows:
        Rg = np.asarray(scores, dtype=float)[r][None]                    # (1, G)
        if method == "max_at_k":
            out[r] = A.max_at_k_advantages(Rg[..., None, None], k=k)[0]  # s(r) of a (1,)-vector is R itself
        else:
            out[r] = A.normalise_group(method, Rg)[0]
    return out


def _make_estimator(method: str) -> Any:
    def estimator(token_level_rewards: Any, response_mask: Any, index: Any = None, config: Any = None,
                  **kwargs: Any) -> tuple[Any, Any]:
        import torch

        if index is None:
            raise ValueError(f"adv_estimator {METHOD_TO_ESTIMATOR[method]} needs the group uids (index)")
        scores = token_level_rewards.sum(dim=-1).detach().cpu().double().numpy()
        k = None
        if config is not None and method == "max_at_k":
            k = config.get("max_at_k_k", None) if hasattr(config, "get") else None
        adv = advantages_from_set_rewards(method, scores, index, k=k)
        a = torch.tensor(adv, dtype=token_level_rewards.dtype, device=token_level_rewards.device)
        a = a.unsqueeze(-1) * response_mask
        return a, a

    estimator.__name__ = f"compute_{METHOD_TO_ESTIMATOR[method]}_outcome_advantage"
    estimator.__doc__ = f"{method}: advantages.py's group step on the vpo reward manager's set rewards."
    return estimator


ESTIMATOR_FNS = {name: _make_estimator(method) for name, method in ESTIMATORS.items()}


# ---- registration ------------------------------------------------------------------------------------------------
def register() -> bool:
    """Register the estimators and the reward manager with verl; False when verl is not importable."""
    try:
        from verl.trainer.ppo import core_algos
    except ImportError:
        return False
    reg = core_algos.ADV_ESTIMATOR_REGISTRY
    for name, fn in ESTIMATOR_FNS.items():
        existing = reg.get(name)
        if existing is fn:
            continue
        if _ours(existing):          # this module imported twice (entry point and VERL_USE_EXTERNAL_MODULES)
            reg[name] = fn
        else:                        # verl raises if one of its own estimators already has the name
            core_algos.register_adv_est(name)(fn)
    _register_reward_manager()
    return True


def _ours(obj: Any) -> bool:
    return obj is not None and getattr(obj, "__module__", "") == __name__


def _register_reward_manager() -> None:
    from verl.experimental.reward_loop.reward_manager import registry
    from verl.experimental.reward_loop.reward_manager.base import RewardManagerBase

    existing = registry.REWARD_MANAGER.get(REWARD_MANAGER)
    if _ours(existing):
        return

    class VPORewardManager(RewardManagerBase):
        """Scores a rollout with the task named in its extra_info; returns the method's set reward."""

        def __init__(self, config: Any, tokenizer: Any, compute_score: Any = None, reward_router_address: Any = None,
                     reward_model_tokenizer: Any = None, **_: Any):
            super().__init__(config, tokenizer, compute_score)
            algo = getattr(config, "algorithm", None) if config is not None else None
            self.estimator = str(algo.get("adv_estimator")) if algo is not None and hasattr(algo, "get") else None
            eos = getattr(tokenizer, "eos_token_id", None)
            self.eos_ids = {int(eos)} if eos is not None else set()

        def decode(self, data: Any) -> tuple[str, bool, Any, dict[str, Any]]:
            item = data[-1:][0]
            resp = item.batch["responses"]
            T = resp.shape[-1]
            n = int(item.batch["attention_mask"][-T:].sum())
            ids = resp[:n].tolist()
            truncated = n >= T and (not ids or int(ids[-1]) not in self.eos_ids)
            text = self.tokenizer.decode(ids, skip_special_tokens=True)
            nt = item.non_tensor_batch
            return text, truncated, nt.get("uid", None), _info_dict(nt.get("extra_info"))

        async def run_single(self, data: Any) -> dict:
            text, truncated, uid, info = self.decode(data)
            if uid is None:
                uid = json.loads(info["problem"])["id"]
            return await self.loop.run_in_executor(
                None, lambda: score_item(info, text, truncated=truncated, uid=uid, estimator=self.estimator))

    VPORewardManager.__module__ = __name__
    VPORewardManager.__qualname__ = "VPORewardManager"
    registry.register(REWARD_MANAGER)(VPORewardManager)
    globals()["VPORewardManager"] = VPORewardManager


try:
    REGISTERED = register()
except Exception as _exc:  # noqa: BLE001 - e.g. a verl whose registry API moved
    _warn_failed("register with verl", _exc)
    raise
