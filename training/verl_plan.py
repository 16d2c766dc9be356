"""What a verl launch must decide from the exported data before it reaches verl.

verl never sees our tasks, only parquet rows and Hydra overrides, so three facts are settled here where
the data and the init model's tokenizer are at hand:

- token limits: verl cuts a prompt longer than ``data.max_prompt_length`` (the agent loop left-truncates
  it with a log line), which on MuSiQue drops the instructions. The limit is the longest exported prompt
  under the model's own chat template, rounded up; prompt + response must fit the model's context;
- a validation set that shares no problem with the training set (a split, or a seeded hold-out);
- the user's own overrides (``--verl-args``), merged over ours key by key.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

#: the validation split of each task when training on its usual split. MuSiQue's offline copy has
#: one split (its ``test`` is the dev set, as in the paper), so training on it validates on a hold-out.
DEFAULT_VAL = {"maze": "val", "musique": "validation", "toolrl": "test", "eureqa": "test", "livecodebench": "test"}
HOLDOUT_FRACTION = 0.1
ROUND_TO = 128
DEFAULT_RESPONSE = 2048


# ---- the init model -----------------------------------------------------------------------------------------
def resolve_model(spec: str) -> str:
    """``hf:NAME``, ``vllm:NAME``, a zoo name, a local folder or a hub id -> what ``from_pretrained``
    (and verl's ``actor_rollout_ref.model.path``) loads: an absolute local folder or a hub id.

    A bare name that is neither a zoo entry nor a folder nor ``org/name`` is refused: it is almost
    always a typo, and verl would only fail minutes later on the GPU node."""
    from vpo_harness.harness.core.models import zoo

    s = spec.split(":", 1)[1] if spec.split(":", 1)[0] in ("hf", "vllm") and ":" in spec else spec
    try:  # the classification `vpo run` uses: zoo name, existing folder, or org/name hub id
        found = zoo.resolve_local(s)
    except (ValueError, FileNotFoundError) as exc:
        raise ValueError(f"--init {spec}: not a zoo model ({', '.join(sorted(zoo.ZOO))}), a local folder, "
                         f"or a hub id like Qwen/Qwen3-4B ({exc})") from None
    p = Path(found)
    if not p.exists():
        return found  # a hub id
    if not (p / "config.json").is_file():
        raise ValueError(f"--init {spec}: {p} has no config.json (not a Hugging Face model folder)")
    return str(p.resolve())


def load_tokenizer(model: str) -> tuple[Any, int | None]:
    """(tokenizer, context length in tokens or None) of a resolved model; one line when it cannot load."""
    from transformers import AutoConfig, AutoTokenizer

    try:
        tok = AutoTokenizer.from_pretrained(model)
        cfg = AutoConfig.from_pretrained(model)
    except Exception as exc:  # noqa: BLE001 - any loader failure is the same user error
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValueError(f"cannot load the tokenizer of {model} here ({first[:160]}); the token limits are "
                         "computed with it: pass a local folder or a hub id this machine can reach")
    ctx = getattr(cfg, "max_position_embeddings", None) or getattr(cfg, "n_positions", None)
    if ctx is None:
        ml = getattr(tok, "model_max_length", None)
        ctx = ml if isinstance(ml, int) and ml < 10_000_000 else None
    return tok, (int(ctx) if ctx else None)


# ---- token limits -------------------------------------------------------------------------------------------
def prompt_tokens(rows: Sequence[dict[str, Any]], tokenizer: Any, chat_kwargs: dict[str, Any] | None = None) -> list[int]:
    """Token count of each row's prompt as verl renders it (chat template, generation prompt on)."""
    out = []
    for r in rows:
        msgs = [dict(m) for m in r["prompt"]]
        if getattr(tokenizer, "chat_template", None):
            ids = tokenizer.apply_chat_template(msgs, add_generation_prompt=True, tokenize=True, **(chat_kwargs or {}))
            if isinstance(ids, dict) or hasattr(ids, "keys"):
                ids = ids["input_ids"]
        else:
            from vpo_harness.harness.core.models.prompting import render_messages

            ids = tokenizer(render_messages(msgs, None), add_special_tokens=False)["input_ids"]
        out.append(len(ids))
    return out


def round_up(n: int, to: int = ROUND_TO) -> int:
    return max(to, -(-int(n) // to) * to)


@dataclass
class Limits:
    max_prompt_length: int
    max_response_length: int
    longest_prompt: int
    context: int | None

    def line(self) -> str:
        ctx = f" of the model's {self.context}" if self.context else ""
        return (f"token limits: data.max_prompt_length={self.max_prompt_length} (longest prompt {self.longest_prompt}, "
                f"rounded up to a multiple of {ROUND_TO}), data.max_response_length={self.max_response_length}"
                f"{ctx}")


def plan_limits(lengths: Sequence[int], context: int | None, response: int | None,
                prompt: int | None = None, filter_overlong: bool = False) -> Limits:
    """Limits for these prompt lengths; refuses (ValueError, one line) what would cut a prompt or
    overflow the context. ``prompt``/``response`` are the user's own values, if any."""
    longest = max(lengths)
    p = round_up(longest) if prompt is None else int(prompt)
    if prompt is None and context is not None and p >= context > longest:
        p = longest                     # rounding up alone would leave no room for a response
    if p < longest and not filter_overlong:
        raise ValueError(f"data.max_prompt_length={p} is shorter than the longest prompt ({longest} tokens): verl "
                         "would truncate it (or add data.filter_overlong_prompts=True to drop such prompts)")
    if response is None:
        r = DEFAULT_RESPONSE if context is None else min(DEFAULT_RESPONSE, context - p)
        if r < 1:
            raise ValueError(f"the model's context ({context} tokens) cannot hold the longest prompt ({longest} tokens) "
                             "and any response: use a longer-context model or a shorter prompt style")
    else:
        r = int(response)
    if context is not None and p + r > context:
        raise ValueError(f"prompt + response = {p} + {r} tokens exceed the model's context of {context} "
                         f"(longest prompt {longest}): lower --max-completion-length or use a longer-context model")
    return Limits(p, r, longest, context)


# ---- validation split ---------------------------------------------------------------------------------------
def overlap(train_rows: Sequence[dict[str, Any]], val_rows: Sequence[dict[str, Any]]) -> int:
    """Problems of the validation rows that also train: same problem id, or the same prompt text."""
    def keys(rows: Sequence[dict[str, Any]]) -> tuple[set[str], set[str]]:
        return ({str(r["extra_info"]["problem_id"]) for r in rows},
                {"\n".join(str(m["content"]) for m in r["prompt"]) for r in rows})

    (ti, tp), n = keys(train_rows), 0
    for r in val_rows:
        if str(r["extra_info"]["problem_id"]) in ti or "\n".join(str(m["content"]) for m in r["prompt"]) in tp:
            n += 1
    return n


def holdout_size(n_problems: int) -> int:
    return max(1, min(200, round(n_problems * HOLDOUT_FRACTION)))


# ---- user overrides -----------------------------------------------------------------------------------------
def split_overrides(text: str) -> list[str]:
    """``k=v,k2=[a,b],k3='x,y'`` -> Hydra overrides, splitting on commas outside brackets and quotes."""
    items, cur, depth, quote = [], "", 0, ""
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(cur.strip())
            cur = ""
            continue
        cur += ch
    items.append(cur.strip())
    out = [x for x in items if x]
    for x in out:
        if "=" not in x and not x.startswith("~"):
            raise ValueError(f"--verl-args: {x!r} is not key=value (Hydra override syntax, e.g. trainer.save_freq=20)")
    return out


def override_key(ov: str) -> str:
    return ov.split("=", 1)[0].lstrip("+~")


def merge_overrides(ours: Sequence[str], extra: Sequence[str]) -> list[str]:
    """Ours with each of the user's overrides replacing the one of the same key (or appended)."""
    out = list(ours)
    for ov in extra:
        k = override_key(ov)
        idx = [i for i, o in enumerate(out) if override_key(o) == k]
        if idx:
            out[idx[0]] = ov
            for i in reversed(idx[1:]):
                del out[i]
        else:
            out.append(ov)
    return out


def user_value(extra: Sequence[str], key: str) -> str | None:
    for ov in extra:
        if override_key(ov) == key and "=" in ov:
            return ov.split("=", 1)[1]
    return None


def compose(overrides: Sequence[str]) -> Any:
    """verl's own ``ppo_trainer`` config with these overrides (raises as Hydra does on unknown keys)."""
    import verl
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    cdir = str(Path(verl.__file__).parent / "trainer" / "config")
    if GlobalHydra.instance().is_initialized():
        GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=cdir, version_base=None):
        return hydra_compose(config_name="ppo_trainer", overrides=list(overrides))


def check_composes(overrides: Sequence[str]) -> None:
    """One line when verl's config rejects an override (an unknown key, a wrong type)."""
    try:
        compose(overrides)
    except Exception as exc:  # noqa: BLE001 - Hydra raises several types; all mean "bad override"
        msg = " ".join(str(exc).split())
        raise ValueError(f"verl's ppo_trainer config rejects the launch overrides: {msg[:300]}")
