"""The OpenEvolve configuration of an evolve run: the user's YAML for everything the flags do not set.

Precedence, for every setting: built-in defaults < ``--config openevolve.yaml`` < the command-line
flags. Two kinds of YAML key meet a flag:

- :data:`YAML_SETTINGS` (sampling, request timeout, iterations in flight): the run's own settings
  (``vpo_harness.search.evolve.EvolveConfig``, whose sampling section is a ``RunConfig``'s). A flag left unset
  takes the YAML's value, and only then the task's or the zoo model's default; the value then
  travels in the run's settings (config.json, the loop's client, the baseline), not through
  OpenEvolve's ``llm`` section, which the engine does not read (search/llm.py sends the requests).
- :data:`RUN_OWNED`: keys the run always sets from a flag with a value of its own (``--iterations``
  20, ``--seed`` 0, ``--model``, ``--base-url``); a YAML value that differs is replaced, with one
  line saying so, never silently.

The result is a real ``openevolve.config.Config`` (built through ``Config.from_dict``) and is written
into the run folder as ``openevolve.yaml``, less the ``llm`` section (what the run sampled with is in
config.json).
"""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from vpo_harness.harness.core.config_schema import lookup
from vpo_harness.harness.core.seeding import derive_seed


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


#: YAML key -> the `vpo evolve` setting it gives where the flag is unset, and what it must be
YAML_SETTINGS: dict[str, tuple[str, str]] = {
    "llm.temperature": ("temperature", "a number"),
    "llm.top_p": ("top_p", "a number"),
    "llm.max_tokens": ("max_tokens", "an integer"),
    "llm.timeout": ("timeout_s", "a number"),
    "evaluator.parallel_evaluations": ("parallel", "an integer"),
}
#: YAML key -> the flag that sets it whatever the YAML says (every seed of a run derives from --seed)
RUN_OWNED: dict[str, str] = {"max_iterations": "--iterations", "random_seed": "--seed",
                             "database.random_seed": "--seed"}


def _is(kind: str, v: Any) -> bool:
    if isinstance(v, bool):
        return False
    return isinstance(v, int) if kind == "an integer" else isinstance(v, (int, float))


def yaml_settings(user: dict[str, Any], path: str | Path | None) -> dict[str, Any]:
    """The run settings the YAML gives (:data:`YAML_SETTINGS`): setting name -> value, for the keys
    present. A value of the wrong type is a one-line ValueError naming the file and the key."""
    out: dict[str, Any] = {}
    for dotted, (name, kind) in YAML_SETTINGS.items():
        found, value = lookup(user, dotted)
        if not found or value is None:
            continue
        if not _is(kind, value):
            raise ValueError(f"{path}: {dotted}: expected {kind}, got {value!r}")
        out[name] = value
    return out


def unused_keys(user: dict[str, Any], iterations: int) -> list[str]:
    """One line per YAML key the run does not take: a :data:`RUN_OWNED` key with another value than
    the flag's, and every ``llm`` key but the :data:`YAML_SETTINGS` and ``api_key`` (the engine sends
    its requests through search/llm.py: model, server and retries come from the flags)."""
    lines = []
    for dotted, flag in RUN_OWNED.items():
        found, value = lookup(user, dotted)
        if found and not (dotted == "max_iterations" and value == iterations):
            lines.append(f"{dotted} ({value!r}) is replaced by {flag}")
    llm = user.get("llm")
    for key in llm if isinstance(llm, dict) else ():
        if f"llm.{key}" not in YAML_SETTINGS and key != "api_key":
            lines.append(f"llm.{key} is not used (the model, server and retries come from --model, "
                         "--base-url and --model-args)")
    return lines


def build_config(user: dict[str, Any], *, task_name: str, feature_dims: list[str], code: bool,
                 iterations: int, seed: int) -> Any:
    """The effective ``openevolve.config.Config``: the task's defaults, the YAML over them, and the
    keys the run owns (:data:`RUN_OWNED`) set from the flags. The ``llm`` section keeps only the
    YAML's ``api_key`` (the loop's client uses it where ``--model-args`` gives none): model, server
    and sampling live in the run's settings."""
    from openevolve.config import Config

    cfg = _merge(task_defaults(task_name, feature_dims, code), user)
    api_key = (cfg.get("llm") or {}).get("api_key") if isinstance(cfg.get("llm"), dict) else None
    cfg["llm"] = {"api_key": api_key} if api_key else {}
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
    d.pop("llm", None)  # not read by the engine; the run's model and sampling are in config.json
    return clean(d)


#: the effective OpenEvolve config's name in the run folder
EFFECTIVE = "openevolve.yaml"


def write_effective(config: Any, folder: Path) -> dict[str, Any]:
    import yaml

    d = effective_dict(config)
    (folder / EFFECTIVE).write_text(yaml.safe_dump(d, sort_keys=True))
    return d
