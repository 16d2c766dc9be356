"""The OpenEvolve configuration of an evolve run: the user's YAML for everything the flags do not set.

Precedence: built-in defaults for this task < ``--config openevolve.yaml`` < the command-line flags
(iterations, model, server, seed, sampling). The result is a real ``openevolve.config.Config`` (built
through ``Config.from_dict`` so the shared LLM settings reach every model entry) and is written into
the run folder as ``openevolve.yaml``.
"""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from harness.core.seeding import derive_seed


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for k, v in (over or {}).items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else copy.deepcopy(v)
    return out


def read_yaml(path: str | Path) -> dict[str, Any]:
    """The user's OpenEvolve YAML as a dict; errors name the file (and line for syntax errors)."""
    import yaml

    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"{p}: no such OpenEvolve config file")
    try:
        data = yaml.safe_load(p.read_text()) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f": line {mark.line + 1}" if mark is not None else ""
        raise ValueError(f"{p}{where}: not valid YAML ({getattr(exc, 'problem', exc)})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{p}: expected a mapping of OpenEvolve settings, got {type(data).__name__}")
    return data


def task_defaults(task_name: str, feature_dims: list[str], code: bool) -> dict[str, Any]:
    """What a researcher expects without a YAML: a few islands, a MAP-Elites grid over the reward
    space, artifacts in prompts, routes (non-code answers) evolved by full rewrites as text."""
    return {
        "checkpoint_interval": 10,
        "log_level": "WARNING",
        "language": "python" if code else "text",
        "file_suffix": ".py" if code else ".txt",
        "diff_based_evolution": bool(code),
        "max_code_length": 20000,
        "database": {"num_islands": 3, "population_size": 200, "archive_size": 50,
                     "feature_dimensions": list(feature_dims), "feature_bins": 5,
                     "migration_interval": 20, "migration_rate": 0.1, "log_prompts": False},
        "evaluator": {"cascade_evaluation": False, "enable_artifacts": True},
        "prompt": {"num_top_programs": 3, "num_diverse_programs": 2, "include_artifacts": True},
    }


def build_config(user: dict[str, Any], *, task_name: str, feature_dims: list[str], code: bool,
                 iterations: int, seed: int, model_name: str, api_base: str, temperature: float,
                 top_p: float, max_tokens: int, timeout_s: float) -> Any:
    """The effective ``openevolve.config.Config``."""
    from openevolve.config import Config

    cfg = _merge(task_defaults(task_name, feature_dims, code), user)
    llm = dict(cfg.get("llm") or {})
    for legacy in ("primary_model", "primary_model_weight", "secondary_model", "secondary_model_weight"):
        llm.pop(legacy, None)  # the model comes from --model
    # several servers (URL1,URL2: a fleet of replicas) are one OpenEvolve model entry each, equal weights
    urls = [u.strip() for u in api_base.split(",") if u.strip()] or [api_base]
    models = [{"name": model_name, "weight": 1.0}] if len(urls) == 1 else \
        [{"name": model_name, "weight": 1.0 / len(urls), "api_base": u} for u in urls]
    llm.update(api_base=urls[0], api_key=llm.get("api_key") or "EMPTY", models=models,
               temperature=temperature, top_p=top_p, max_tokens=max_tokens, timeout=int(timeout_s),
               random_seed=derive_seed(seed, "openevolve-llm", 0))
    cfg["llm"] = llm
    cfg["max_iterations"] = iterations
    cfg["random_seed"] = derive_seed(seed, "openevolve", 0)
    cfg.setdefault("database", {})["random_seed"] = cfg["random_seed"]
    if "feature_dimensions" not in (user.get("database") or {}):
        cfg["database"]["feature_dimensions"] = list(feature_dims)
    try:
        return Config.from_dict(cfg)
    except Exception as exc:  # dacite / validation: one line naming the section
        raise ValueError(f"OpenEvolve config: {type(exc).__name__}: {exc}") from None


def effective_dict(config: Any) -> dict[str, Any]:
    """A YAML/JSON-safe dump of the effective config (callables and clients dropped)."""
    import dataclasses

    def clean(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items() if not str(k).startswith("_")}
        if isinstance(v, (list, tuple)):
            return [clean(x) for x in v]
        if v is None or isinstance(v, (str, int, float, bool)):
            return v
        return repr(v)

    d = dataclasses.asdict(config)
    d.get("database", {}).pop("novelty_llm", None)
    for m in d.get("llm", {}).get("models", []) + d.get("llm", {}).get("evaluator_models", []):
        m.pop("init_client", None)
    return clean(d)


def write_effective(config: Any, folder: Path) -> dict[str, Any]:
    import yaml

    d = effective_dict(config)
    (folder / "openevolve.yaml").write_text(yaml.safe_dump(d, sort_keys=True))
    return d
