"""VPO and its baselines on TRL: a ``GRPOTrainer`` whose advantages come from ``training/advantages.py``.

TRL (>= 1.16) has no advantage hook and only scalar reward functions, so the subclass does three things
and leaves generation, the loss, vLLM, distributed training and checkpointing to TRL:

1. Reward functions, one per reward component of the task (``rewards/<component>/mean`` in TRL's logs is
   then the mean reward per component). All of them read one shared scoring of the batch: the task's
   chain scoring (parse -> reward vectors -> dedup keys; code graded in the task's sandbox pool).
2. ``_calculate_rewards`` keeps the full reward tensor (rollouts, m, d), with truncated rollouts zeroed
   and duplicates removed, gathered over processes like TRL's own rewards.
3. ``_generate_and_score_completions`` replaces ``output["advantages"]`` with the method's advantages
   over the global batch viewed as (groups, G, m, d), then keeps this process's slice.

Generation is untouched, so plain ``generate`` on a CPU and ``use_vllm=True`` on GPUs run the same code.
The native trainer's conventions are kept: weights come from ``default_rng([seed, step, 1])``, hidden
random-weighting weights from stream 2, goal-conditioned weights are part of the dataset row (the G
rollouts of a prompt share them).

    python -m vpo_harness.training.trl_vpo --init runs/train/maze-sft/checkpoint --task maze --method vpo \\
        --out runs/trl/maze-vpo --steps 30 --prompt-style compact
"""
from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch

from vpo_harness.benchmarks import get_task
from vpo_harness.benchmarks.base import Benchmark, Problem
from vpo_harness.training import rollouts as R


# ---- settings ---------------------------------------------------------------------------------------------
@dataclass
class TRLVPOConfig:
    """What a run needs beyond TRL's own GRPOConfig. Defaults are the paper's (docs/vpo.md): K = 100
    Dirichlet(1) weights per group, m = 3, G = 8, PPO-clip 0.2, k3 KL 1e-3, temperature 1.0, lr 1e-6."""

    init: str = "hf:smollm2-135m"        # a local HF folder, or hf:ZOO / hf:PATH as in `vpo run`
    out: str = "runs/trl/run"
    task: str = "maze"
    task_args: dict[str, Any] = field(default_factory=dict)
    method: str = "vpo"
    split: str = "train"
    data_path: str | None = None          # local data files of the task (as `vpo run --data-path`)
    limit: int | None = None
    augment: bool = False                 # Maze: add the 8 dihedral images of every train maze
    prompt_style: str = "full"
    m: int = 3
    group_size: int = 8                   # G
    prompts_per_step: int = 8             # prompts per generation round
    minibatches: int = 1                  # optimizer steps per generation round
    steps: int = 100                      # generation rounds
    lr: float = 1e-6
    beta: float = 1e-3                    # KL coefficient (TRL's k3 estimator)
    clip: float = 0.2
    temperature: float = 1.0
    top_p: float = 1.0
    max_completion_length: int = 256
    loss_type: str = "grpo"               # per-sequence token mean, then batch mean (the native trainer's)
    K: int = 100
    alpha: float = 1.0
    sobol: bool = False
    max_k: int | None = None
    truncated_reward: str = "zero"
    score_workers: int = 1
    seed: int = 42
    #: a resumable checkpoint (weights, optimizer, RNG, trainer state) every N generation rounds under
    #: <out>/trl/checkpoint-<optimizer step>; re-running the same command resumes from the last one
    save_every: int = 10
    save_total_limit: int | None = 2      # keep the last N resumable checkpoints (None: all)
    logging_steps: int = 1
    use_vllm: bool = False
    vllm_mode: str = "colocate"
    bf16: bool = False
    #: None: on with CUDA (memory), off on CPU. TRL turns it on by default, and with it plain
    #: `generate` runs without a KV cache: every new token re-reads the whole prompt (a 135M model on
    #: ToolRL's ~1k-token prompts then spends minutes per rollout on a CPU)
    gradient_checkpointing: bool | None = None
    threads: int | None = None
    grpo_overrides: dict[str, Any] = field(default_factory=dict)   # any other GRPOConfig field (--trl-args)
    lora: dict[str, Any] = field(default_factory=dict)             # peft LoraConfig fields (--lora); {}: full
    #: the chat template's keyword arguments (Qwen3's enable_thinking): TRL's chat_template_kwargs
    chat_template_args: dict[str, Any] = field(default_factory=dict)

    def validate(self) -> None:
        R.is_multi(self.method)            # raises on an unknown method
        if self.group_size < 2:
            raise ValueError("group_size (G) must be at least 2: advantages compare rollouts of a prompt")
        if (self.prompts_per_step * self.group_size) % self.minibatches:
            raise ValueError(f"prompts_per_step x group_size = {self.prompts_per_step * self.group_size} "
                             f"is not divisible by minibatches = {self.minibatches}")
        if self.truncated_reward not in ("zero", "keep"):
            raise ValueError(f"truncated_reward must be zero or keep, got {self.truncated_reward!r}")
        check_grpo_overrides(self.grpo_overrides)
        ga = self.grpo_overrides.get("gradient_accumulation_steps", 1)
        n = self.prompts_per_step * self.group_size
        if not isinstance(ga, int) or ga < 1 or n % (self.minibatches * ga):
            raise ValueError(f"--trl-args gradient_accumulation_steps={ga}: prompts_per_step x group_size = {n} is not "
                             f"divisible by minibatches x gradient_accumulation_steps")


#: GRPOConfig fields a run sets from its own settings: --trl-args must use the run's flag instead
OWN_FIELDS = {"output_dir": "--out", "learning_rate": "--rl-lr", "beta": "--kl-coef", "num_generations": "--group-size",
              "max_steps": "--rl-steps", "max_completion_length": "--max-completion-length", "seed": "--seed",
              "per_device_train_batch_size": "--prompts-per-step / --minibatches",
              "steps_per_generation": "--minibatches", "use_vllm": "--use-vllm",
              "resume_from_checkpoint": "re-running the command (it resumes)"}


def check_grpo_overrides(overrides: dict[str, Any]) -> None:
    """One line for a --trl-args key that GRPOConfig does not have, or that a run flag owns."""
    if not overrides:
        return
    try:
        from trl import GRPOConfig
    except ImportError:  # pragma: no cover - train_trl needs TRL anyway
        return
    known = {f.name for f in fields(GRPOConfig)}
    for k in overrides:
        if k in OWN_FIELDS:
            raise ValueError(f"--trl-args {k}: set by the run itself; use {OWN_FIELDS[k]}")
        if k not in known:
            from vpo_harness.harness.core.suggest import did_you_mean

            hint = did_you_mean(k, sorted(known), n=1)
            raise ValueError(f"--trl-args {k}: not a field of TRL's GRPOConfig" + (f" ({hint})" if hint else ""))


def lora_config(spec: dict[str, Any]) -> Any:
    """peft's LoraConfig from --lora k=v,...; ``target_modules`` may be ``all-linear`` or a+b+c."""
    if not spec:
        return None
    try:
        from peft import LoraConfig
    except ImportError:
        raise ValueError("--lora needs peft: pip install 'peft>=0.17' (the train extra)")
    known = {f.name for f in fields(LoraConfig)}
    kw = dict(spec)
    for k in kw:
        if k not in known:
            raise ValueError(f"--lora {k}: not a field of peft's LoraConfig")
    if isinstance(kw.get("target_modules"), str) and "+" in kw["target_modules"]:
        kw["target_modules"] = kw["target_modules"].split("+")
    kw.setdefault("task_type", "CAUSAL_LM")
    kw.setdefault("target_modules", "all-linear")
    return LoraConfig(**kw)


# ---- dataset ----------------------------------------------------------------------------------------------------
def build_rows(task: Benchmark, problems: Sequence[Problem], cfg: TRLVPOConfig, tokenizer: Any = None) -> list[dict[str, Any]]:
    """One dataset row per problem: the method's prompt, the problem as JSON, goal weights.

    Prompts are chat messages when the tokenizer has a chat template (TRL renders them exactly as the
    harness's hf backend does) and the harness's plain rendering otherwise, so a policy is trained on
    the very text ``vpo run`` will show it.
    """
    from vpo_harness.harness.core.models.prompting import render_messages

    templated = tokenizer is None or bool(getattr(tokenizer, "chat_template", None))
    rows = []
    for p, gw in zip(problems, R.goal_weights(task, problems, cfg.method, seed=cfg.seed, alpha=cfg.alpha)):
        msgs = R.method_prompt(task, p, cfg.method, cfg.m, cfg.prompt_style, gw)
        rows.append({"prompt": msgs if templated else render_messages(msgs, None, cfg.chat_template_args),
                     "problem": R.problem_to_json(p), "goal_weights": gw or []})
    return rows


def load_problems(task: Benchmark, cfg: TRLVPOConfig) -> list[Problem]:
    problems = task.load(cfg.split, path=cfg.data_path, limit=cfg.limit)
    if cfg.augment:
        if task.name != "maze":
            raise ValueError("augment (dihedral images) exists for maze only")
        from vpo_harness.training.data import augment
        problems, _ = augment(problems, {})
    if not problems:
        raise ValueError(f"task {task.name!r} split {cfg.split!r} has no problems")
    return problems


# ---- reward functions -----------------------------------------------------------------------------------------
def completion_text(c: Any) -> str:
    """TRL passes plain strings, or [{"role": "assistant", "content": ...}] for chat prompts."""
    if isinstance(c, str):
        return c
    if isinstance(c, list) and c and isinstance(c[-1], dict):
        content = c[-1].get("content", "")
        return content if isinstance(content, str) else "".join(x.get("text", "") for x in content if isinstance(x, dict))
    return str(c)


class TaskScorer:
    """Scores a TRL batch once and serves it to one reward function per component.

    Usable on its own with a stock ``GRPOTrainer`` (``reward_funcs=scorer.reward_funcs()``): a component's
    reward is its mean over the rollout's answers. The VPO trainer also reads ``last`` for the tensors.
    """

    def __init__(self, task: Benchmark, method: str, m: int, *, truncated_reward: str = "zero",
                 workers: int = 1, eos_token_ids: Sequence[int] = ()):
        self.task, self.method = task, method
        self.m = R.answers_per_rollout(method, m)
        self.truncated_reward, self.workers = truncated_reward, workers
        self.eos_token_ids = set(int(t) for t in eos_token_ids)
        self.components = tuple(task.component_names)
        self._problems: dict[str, Problem] = {}
        self._key: Any = None
        self.last: R.ScoredBatch | None = None
        self.last_problems: list[Problem] = []
        self.score_s = 0.0

    def problem(self, text: str) -> Problem:
        if text not in self._problems:
            self._problems[text] = R.problem_from_json(text)
        return self._problems[text]

    def truncated(self, completion_ids: Sequence[Sequence[int]] | None) -> list[bool]:
        if completion_ids is None or not self.eos_token_ids:
            return [False] * (0 if completion_ids is None else len(completion_ids))
        return [len(ids) == 0 or int(ids[-1]) not in self.eos_token_ids for ids in completion_ids]

    def score(self, completions: Sequence[Any], problem: Sequence[str],
              completion_ids: Sequence[Sequence[int]] | None = None) -> R.ScoredBatch:
        texts = [completion_text(c) for c in completions]
        key = (tuple(texts), tuple(problem))
        if key != self._key:
            t0 = time.perf_counter()
            probs = [self.problem(p) for p in problem]
            cut = self.truncated(completion_ids) if completion_ids is not None else None
            self.last = R.score_rollouts(self.task, probs, texts, m=self.m, truncated=cut or None,
                                         truncated_reward=self.truncated_reward,
                                         dedup=R.is_multi(self.method), workers=self.workers)
            self.last_problems = probs
            self._key = key
            self.score_s += time.perf_counter() - t0
        assert self.last is not None
        return self.last

    def reward_funcs(self) -> list[Any]:
        return [_ComponentReward(self, j, name) for j, name in enumerate(self.components)]


class _ComponentReward:
    """Reward function of one component: its mean over the rollout's answers (None where the
    rollout's problem has no such component, e.g. a code problem with fewer tests)."""

    def __init__(self, scorer: TaskScorer, j: int, name: str):
        self.scorer, self.j, self.__name__ = scorer, j, name

    def __call__(self, prompts: Any = None, completions: Any = None, completion_ids: Any = None,
                 problem: Sequence[str] = (), **_: Any) -> list[float | None]:
        sb = self.scorer.score(completions, problem, completion_ids)
        vals = sb.raw[:, :, self.j].mean(axis=1) if self.j < sb.raw.shape[2] else np.zeros(len(sb.d))
        return [float(v) if self.j < dd else None for v, dd in zip(vals, sb.d)]


# ---- the trainer -----------------------------------------------------------------------------------------------
def _grpo_trainer_cls() -> type:
    from trl import GRPOTrainer

    class VPOGRPOTrainer(GRPOTrainer):
        """GRPOTrainer with advantages from training/advantages.py (see the module docstring)."""

        def __init__(self, *args: Any, scorer: TaskScorer, vpo: TRLVPOConfig, **kwargs: Any):
            self.scorer, self.vpo = scorer, vpo
            self._vpo_global: dict[str, Any] | None = None
            super().__init__(*args, **kwargs)
            # TRL's own truncation rule: a completion is cut unless it ends in an end or pad token
            self.scorer.eos_token_ids = {int(t) for t in self.eos_token_ids} | {int(self._tokenizer.pad_token_id)}

        # -- rewards: score once, keep the tensors, gather them like TRL gathers rewards_per_func
        def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
            sb = self.scorer.score(completions, [x["problem"] for x in inputs], completion_ids_list)
            out = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
            from accelerate.utils import gather_object

            dev = self.accelerator.device
            width = len(self.scorer.components)
            m = self.scorer.m

            def pad(a: np.ndarray) -> torch.Tensor:
                full = np.zeros((a.shape[0], m, width))
                full[:, :, : a.shape[2]] = a
                return torch.tensor(full, dtype=torch.float64, device=dev)

            self._vpo_global = {
                "raw": self.accelerator.gather(pad(sb.raw)).cpu().numpy(),
                "deduped": self.accelerator.gather(pad(sb.deduped)).cpu().numpy(),
                "d": self.accelerator.gather(torch.tensor(sb.d, device=dev)).cpu().numpy(),
                "truncated": self.accelerator.gather(torch.tensor(sb.truncated, device=dev)).cpu().numpy(),
                "n_unique": self.accelerator.gather(torch.tensor(sb.n_unique, device=dev)).cpu().numpy(),
                "goal_weights": gather_object([list(x.get("goal_weights") or []) for x in inputs]),
            }
            return out

        def vpo_advantages(self, g: dict[str, Any], step: int, num_generations: int) -> np.ndarray:
            """(N_global,) advantages of the gathered batch: the one method-specific computation."""
            v = self.vpo
            G = num_generations
            rewards = g["deduped"].reshape(-1, G, self.scorer.m, g["deduped"].shape[-1])
            d = g["d"].reshape(-1, G)[:, 0]
            row_w = None
            if v.method == "goal_cond":
                row_w = np.zeros(rewards.shape[:2] + (rewards.shape[-1],))
                for i, w in enumerate(g["goal_weights"]):
                    row_w[i // G, i % G, : len(w)] = w
            adv = R.group_advantages(v.method, rewards, d, seed=v.seed, step=step, K=v.K, alpha=v.alpha,
                                     sobol=v.sobol, k=v.max_k, row_weights=row_w)
            return adv.reshape(-1)

        def _relabel_trl_columns(self, mode: str, adv: np.ndarray) -> None:
            """TRL logged the spread of its own summed reward (the basis of *its* advantages, which this
            trainer discards) as ``reward_std`` / ``frac_reward_zero_std``: move them under names that
            say so, and put the advantages that trained the model into the completions table."""
            log = self._metrics[mode]
            for old, new in (("reward_std", "trl/summed_reward_std"),
                             ("frac_reward_zero_std", "trl/frac_summed_reward_zero_std")):
                if log.get(old):
                    log[new].append(log[old].pop())
                    if not log[old]:
                        del log[old]
            table = self._logs.get("advantages")
            if table is not None and len(adv):
                n = min(len(adv), len(table))
                for _ in range(n):
                    table.pop()
                table.extend(float(a) for a in adv[len(adv) - n:])

        def _generate_and_score_completions(self, inputs):
            t0 = time.perf_counter()
            score0 = self.scorer.score_s
            output = super()._generate_and_score_completions(inputs)
            mode = "train" if self.model.training else "eval"
            G = self.num_generations if mode == "train" else self.num_generations_eval
            g = self._vpo_global
            assert g is not None, "_calculate_rewards did not run"
            step = int(self.state.global_step)
            adv = self.vpo_advantages(g, step, G)
            n_local = output["advantages"].shape[0]
            start = self.accelerator.process_index * n_local
            output["advantages"] = torch.tensor(adv[start:start + n_local], dtype=torch.float32,
                                                device=output["advantages"].device)
            self._relabel_trl_columns(mode, adv)
            # per-step curves (rank-0 values equal everyone's: computed on the gathered batch)
            v = self.vpo
            raw = g["raw"].reshape(-1, G, self.scorer.m, g["raw"].shape[-1])
            d = g["d"].reshape(-1, G)[:, 0]
            met = R.batch_metrics(raw, d, K=v.K, alpha=v.alpha, seed=v.seed + step)
            scal = np.array([float(np.mean(self.scorer.task.scalar(raw[b, ..., : d[b]]))) for b in range(len(d))])
            log = self._metrics[mode]
            log["vpo/task_scalar"].append(float(scal.mean()))
            log["vpo/diversity"].append(met["diversity"])
            log["vpo/objective"].append(met["vpo_objective"])
            log["vpo/truncated"].append(float(np.mean(g["truncated"])))
            log["vpo/unique_answers"].append(float(np.mean(g["n_unique"])))
            log["vpo/adv_abs"].append(float(np.abs(adv).mean()))
            log["time/score_s"].append(self.scorer.score_s - score0)
            log["time/generate_and_score_s"].append(time.perf_counter() - t0)
            return output

    return VPOGRPOTrainer


def VPOGRPOTrainer(*args: Any, **kwargs: Any) -> Any:  # noqa: N802 - a class factory reads like a class
    """Build the trainer (TRL is imported on first use only)."""
    return _grpo_trainer_cls()(*args, **kwargs)


def grpo_config(cfg: TRLVPOConfig, **extra: Any) -> Any:
    """TRL's GRPOConfig for a run: one generation round = prompts_per_step x G rollouts and
    ``minibatches`` optimizer steps; TRL's max_steps counts optimizer steps.

    ``gradient_accumulation_steps`` (from --trl-args) splits each optimizer step's rollouts into that
    many micro-batches: the round, the optimizer steps and the advantages stay the same, only the
    batch that is in memory at once shrinks (the logits of a 49k-token vocabulary dominate it)."""
    from trl import GRPOConfig

    n = cfg.prompts_per_step * cfg.group_size
    ga = int(cfg.grpo_overrides.get("gradient_accumulation_steps", 1))      # checked by cfg.validate()
    kw: dict[str, Any] = dict(
        output_dir=str(Path(cfg.out) / "trl"), learning_rate=cfg.lr, beta=cfg.beta, epsilon=cfg.clip,
        num_generations=cfg.group_size, per_device_train_batch_size=n // (cfg.minibatches * ga),
        steps_per_generation=cfg.minibatches * ga, gradient_accumulation_steps=ga, num_iterations=1,
        max_steps=cfg.steps * cfg.minibatches, temperature=cfg.temperature, top_p=cfg.top_p, top_k=0,
        max_completion_length=cfg.max_completion_length, loss_type=cfg.loss_type, scale_rewards="group",
        seed=cfg.seed, data_seed=cfg.seed, logging_steps=cfg.logging_steps, report_to=[],
        save_strategy="steps" if cfg.save_every else "no",
        save_steps=max(1, cfg.save_every * cfg.minibatches) if cfg.save_every else 500,
        save_total_limit=cfg.save_total_limit,
        use_cpu=not torch.cuda.is_available(), bf16=cfg.bf16, use_vllm=cfg.use_vllm,
        vllm_mode=cfg.vllm_mode, disable_dropout=True, shuffle_dataset=True, log_completions=False,
        remove_unused_columns=False, lr_scheduler_type="constant", warmup_steps=0,
        adam_beta2=0.99, weight_decay=0.0, max_grad_norm=1.0,
        gradient_checkpointing=torch.cuda.is_available() if cfg.gradient_checkpointing is None else cfg.gradient_checkpointing,
    )
    if cfg.chat_template_args:  # TRL renders the chat prompts with these, as `vpo run` does
        kw["chat_template_kwargs"] = dict(cfg.chat_template_args)
    kw.update({k: v for k, v in cfg.grpo_overrides.items() if k != "gradient_accumulation_steps"})
    kw.update(extra)
    try:
        return GRPOConfig(**kw)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"TRL's GRPOConfig rejects the settings: {' '.join(str(exc).split())[:300]}")


def resolve_init(spec: str) -> str:
    """``hf:NAME``/``hf:PATH`` as in `vpo run`, a zoo name, a local folder or a hub id -> what
    ``from_pretrained`` loads (one resolver for TRL and verl: training/verl_plan.py)."""
    from vpo_harness.training.verl_plan import resolve_model

    return resolve_model(spec)


#: settings that may change between a run and its resumption (the rest must match the saved run)
RESUMABLE_CHANGES = {"steps", "save_every", "save_total_limit", "logging_steps", "threads", "score_workers"}


def last_checkpoint(out: Path) -> Path | None:
    """The newest complete resumable checkpoint under <out>/trl (a run killed while saving leaves a
    folder without its trainer state: skipped)."""
    need = ("trainer_state.json", "optimizer.pt", "scheduler.pt")
    found = []
    for d in (out / "trl").glob("checkpoint-*"):
        tail = d.name.split("-", 1)[1]
        if tail.isdigit() and all((d / f).is_file() for f in need) and list(d.glob("rng_state*.pth")):
            found.append((int(tail), d))
    return max(found)[1] if found else None


def check_resumable(out: Path, cfg: TRLVPOConfig) -> None:
    """One line when <out> holds a run with other settings (resuming would mix two runs)."""
    saved_path = out / "trl_vpo_config.json"
    if not saved_path.is_file():
        return
    saved = json.loads(saved_path.read_text())
    now = json.loads(json.dumps(asdict(cfg), default=str))
    for k, v in now.items():
        if k not in RESUMABLE_CHANGES and k in saved and saved[k] != v:
            raise ValueError(f"{out} holds a TRL run with {k}={saved[k]!r} (now {v!r}): resuming would mix two runs; "
                             "use another --out or the same settings")


def training_record(cfg: TRLVPOConfig) -> dict[str, Any]:
    """vpo_training.json: the run's settings plus the generation defaults `vpo run` reads."""
    from vpo_harness.training.model_card import generation_record

    conf = {**asdict(cfg), **generation_record(cfg.prompt_style, cfg.max_completion_length, cfg.max_completion_length)}
    return {"engine": "trl", "method": cfg.method, "task": cfg.task, "steps": cfg.steps, "init": cfg.init,
            "config": conf}


def train_trl(cfg: TRLVPOConfig, *, trainer_hook: Any = None) -> Path:
    """Run TRL GRPO with the method's advantages; returns the saved HF checkpoint folder. Re-running
    the same command resumes from the last checkpoint in <out>/trl (optimizer, RNG and data order too)."""
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer

    cfg.validate()
    peft_cfg = lora_config(cfg.lora)
    if cfg.threads:
        torch.set_num_threads(int(cfg.threads))
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    resume = last_checkpoint(out)
    if resume is not None:
        check_resumable(out, cfg)
        print(f"resuming TRL from {resume}")
    (out / "trl_vpo_config.json").write_text(json.dumps(asdict(cfg), indent=2, default=str))
    task = get_task(cfg.task, **cfg.task_args)
    init = resolve_init(cfg.init)
    tok = AutoTokenizer.from_pretrained(init)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    problems = load_problems(task, cfg)
    ds = Dataset.from_list(build_rows(task, problems, cfg, tok))
    scorer = TaskScorer(task, cfg.method, cfg.m, truncated_reward=cfg.truncated_reward, workers=cfg.score_workers)
    torch.manual_seed(cfg.seed)
    model = AutoModelForCausalLM.from_pretrained(init, dtype=torch.bfloat16 if cfg.bf16 else torch.float32)
    trainer = VPOGRPOTrainer(model=model, reward_funcs=scorer.reward_funcs(), args=grpo_config(cfg),
                             train_dataset=ds, processing_class=tok, scorer=scorer, vpo=cfg, peft_config=peft_cfg)
    if trainer_hook is not None:
        trainer_hook(trainer)
    t0 = time.time()
    trainer.train(resume_from_checkpoint=str(resume) if resume is not None else None)
    wall = time.time() - t0
    ckpt = out / "checkpoint"
    if peft_cfg is not None:            # a full model `vpo run` loads, not an adapter
        merged = trainer.accelerator.unwrap_model(trainer.model).merge_and_unload()
        merged.save_pretrained(str(ckpt))
    else:
        trainer.save_model(str(ckpt))
    tok.save_pretrained(str(ckpt))
    rows = log_rows(trainer.state.log_history, cfg.minibatches)
    write_curves(out, rows)
    (ckpt / "vpo_training.json").write_text(json.dumps(training_record(cfg), indent=2, default=str))
    write_model_card(ckpt, cfg, rows, wall, init)
    if hasattr(task, "close"):
        task.close()
    return ckpt


# ---- logs, curves, model card -----------------------------------------------------------------------------
CURVE_KEYS = ("reward", "vpo/task_scalar", "vpo/diversity", "vpo/objective", "vpo/truncated", "kl", "loss",
              "entropy")


def log_rows(history: list[dict[str, Any]], minibatches: int = 1) -> list[dict[str, Any]]:
    """TRL's log history (one dict per logging step) as curve rows keyed by generation round."""
    rows = []
    for h in history:
        if "step" not in h or "train_runtime" in h:
            continue
        row = {k: v for k, v in h.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        row["round"] = math.ceil(h["step"] / max(1, minibatches))
        rows.append(row)
    return rows


def write_curves(out: Path, rows: list[dict[str, Any]]) -> None:
    from vpo_harness.training.common import plot_curves

    path = out / "trl_curves.jsonl"
    path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    comp = sorted({k for r in rows for k in r if k.startswith("rewards/") and k.endswith("/mean")})
    plot_curves(path, out / "trl_curves.png", [k for k in CURVE_KEYS if any(k in r for r in rows)] + comp[:6],
                "TRL training")


def write_model_card(ckpt: Path, cfg: TRLVPOConfig, rows: list[dict[str, Any]], wall_s: float, init: str) -> Path:
    """README.md with method, task, data, steps, settings and curves (first/last logged values)."""
    import shutil

    from vpo_harness.training.model_card import eval_command

    for f in ("trl_curves.jsonl", "trl_curves.png", "trl_vpo_config.json"):
        src = Path(cfg.out) / f
        if src.exists():
            shutil.copy2(src, ckpt / f)
    keys = [k for k in CURVE_KEYS if any(k in r for r in rows)]
    keys += sorted({k for r in rows for k in r if k.startswith("rewards/") and k.endswith("/mean")})

    def avg(part: list[dict[str, Any]], k: str) -> str:
        v = [r[k] for r in part if k in r]
        return f"{np.mean(v):.4f}" if v else "-"

    head, tail = rows[:5], rows[-5:]
    table = "\n".join(f"| {k} | {avg(head, k)} | {avg(tail, k)} |" for k in keys)
    multi = R.is_multi(cfg.method)
    vpo_line = (f"; K = {cfg.K} {'scrambled-Sobol' if cfg.sobol else 'Dirichlet'}(alpha = {cfg.alpha}) weights per group"
                if cfg.method == "vpo" else "")
    card = f"""---
library_name: transformers
pipeline_tag: text-generation
tags: [vpo, trl, {cfg.task}, {cfg.method}]
---
# {Path(cfg.out).name}: {cfg.method} on {cfg.task} (TRL)

Trained with `training/trl_vpo.py` (TRL GRPOTrainer, advantages from `training/advantages.py`).

- Method: **{cfg.method}** ({'multi-answer chains of m = ' + str(cfg.m) + ', duplicates removed by the task dedup key' if multi else 'single answer'}){vpo_line}.
- Task: `{cfg.task}`{' ' + str(cfg.task_args) if cfg.task_args else ''}, split `{cfg.split}`{', limit ' + str(cfg.limit) if cfg.limit else ''}{', 8 dihedral images' if cfg.augment else ''}; prompt style `{cfg.prompt_style}`.
- Init: `{cfg.init}` ({init}).
- {cfg.steps} generation rounds x {cfg.prompts_per_step} prompts x G = {cfg.group_size}, {cfg.minibatches} optimizer step(s) per round;
  lr {cfg.lr}, KL beta {cfg.beta}, clip {cfg.clip}, temperature {cfg.temperature}, top-p {cfg.top_p},
  max completion {cfg.max_completion_length} tokens, loss `{cfg.loss_type}`, truncated rollouts: {cfg.truncated_reward}; seed {cfg.seed}.
- Wall time {wall_s / 60:.1f} min; generation: {'vLLM (' + cfg.vllm_mode + ')' if cfg.use_vllm else 'transformers generate'}.

Evaluate (prompt style and token budgets come from `vpo_training.json` in this folder):
```bash
{eval_command(ckpt, cfg.task, cfg.method, cfg.m, task_args=cfg.task_args)}
```

`reward` in the table is TRL's sum of the per-component reward functions (each the mean over the
rollout's answers). The advantages that trained the model come from `training/advantages.py`
(`vpo/adv_abs` is their mean absolute value); TRL's own spread of the summed reward, which its default
advantages would use, is logged as `trl/summed_reward_std`.

## Curves (mean of first / last 5 logged steps)
![curves](trl_curves.png)

| metric | first | last |
|---|---|---|
{table}

Raw: `trl_curves.jsonl`; full settings: `trl_vpo_config.json`.
"""
    (ckpt / "README.md").write_text(card)
    return ckpt / "README.md"


# ---- command line -------------------------------------------------------------------------------------------------
def add_arguments(p: argparse.ArgumentParser) -> None:
    """One flag per TRLVPOConfig field, its type and default read from the dataclass (training/flags.py):
    ``--grpo-overrides`` and ``--lora`` take ``k=v,...``."""
    from vpo_harness.training.flags import add_config_arguments

    add_config_arguments(p, TRLVPOConfig)


def main(argv: list[str] | None = None) -> None:
    from vpo_harness.training.flags import config_from_args, main_parser

    p, flags = main_parser(TRLVPOConfig, __doc__)
    print(train_trl(config_from_args(TRLVPOConfig, p.parse_args(argv), flags)))


if __name__ == "__main__":
    main()
