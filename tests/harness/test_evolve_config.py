"""EvolveConfig: one declaration says which settings identify an evolve run; the folder name and the
resume check both read it (they used to keep two lists, and disagreed on timeout_s and base_url)."""
from __future__ import annotations

from dataclasses import fields, replace

import pytest

from vpo_harness.search.evolve import SECTIONS, EvolveConfig


def base(**kw) -> EvolveConfig:
    return EvolveConfig(task="maze", model="hf:maze-tiny-vpo", prompt_style="moves", max_tokens=256, **kw)


def test_every_field_is_declared_once():
    declared = [name for names in SECTIONS.values() for name in names]
    assert sorted(declared) == sorted(f.name for f in fields(EvolveConfig))
    assert len(declared) == len(set(declared))


EXECUTION_CHANGES = {"out": "elsewhere", "progress": False, "concurrency": 3, "serve_threads": 4, "timeout_s": 9.0,
                     "base_url": "http://127.0.0.1:2/v1"}
IDENTITY_CHANGES = {"problems": "hardest:4", "iterations": 7, "m": 3, "prompt_mode": "task", "split": "val",
                    "limit": 5, "task_options": {"parse": "lenient"}, "temperature": 0.5, "top_p": 0.9,
                    "max_tokens": 128, "seed": 1, "baseline": False, "config_path": "oe.yaml",
                    "data_path": "x.jsonl", "prompt_style": "full", "model": "hf:maze-tiny-grpo",
                    "model_args": {"dtype": "float64"}, "chat_template_args": {"enable_thinking": False}}

EXECUTION_CHANGES["parallel"] = 2  # in flight: speed only (search/engine.py's schedule)
IDENTITY_CHANGES["lag"] = 1        # which database state each iteration draws from
IDENTITY_CHANGES["allow_zero_parents"] = False  # which parents may be drawn
IDENTITY_CHANGES["select"] = "pareto"           # how parents are drawn (search/pareto.py)
#: identity only where they act (prefix mode); elsewhere they are left out, so older folders keep theirs
PREFIX_IDENTITY_CHANGES = {"cut": "plateau"}


def test_changes_cover_every_field():
    assert set(EXECUTION_CHANGES) | set(IDENTITY_CHANGES) | set(PREFIX_IDENTITY_CHANGES) | {"task"} == \
        {f.name for f in fields(EvolveConfig)}


@pytest.mark.parametrize("name", sorted(PREFIX_IDENTITY_CHANGES))
def test_prefix_settings_are_identity_in_prefix_mode_only(name):
    a, b = base(prompt_mode="prefix"), base(prompt_mode="prefix", **{name: PREFIX_IDENTITY_CHANGES[name]})
    assert a.identity() != b.identity() and a.default_out() != b.default_out()
    a, b = base(), base(**{name: PREFIX_IDENTITY_CHANGES[name]})
    assert a.identity() == b.identity() and name not in a.identity()["evolve"]


def test_new_evolve_fields_keep_older_identities():
    evolve = base().identity()["evolve"]
    assert "cut" not in evolve and "allow_zero_parents" not in evolve and "select" not in evolve
    assert base(select="pareto").identity()["evolve"]["select"] == "pareto"
    assert base(prompt_mode="prefix").identity()["evolve"]["cut"] == "uniform"


def test_zero_parents_default_follows_the_mode():
    assert base().zero_parents_allowed() and base(prompt_mode="task").zero_parents_allowed()
    assert not base(prompt_mode="prefix").zero_parents_allowed()
    assert base(prompt_mode="prefix", allow_zero_parents=True).zero_parents_allowed()


@pytest.mark.parametrize("kw, match", [({"prompt_mode": "prefixx"}, "--prompt-mode"), ({"cut": "middle"}, "--cut"),
                                       ({"select": "front"}, "--select")])
def test_bad_prefix_settings_are_one_line(kw, match):
    with pytest.raises(ValueError, match=match):
        base(**kw).validate()


@pytest.mark.parametrize("name", sorted(EXECUTION_CHANGES))
def test_execution_settings_keep_the_folder_and_identity(name):
    a, b = base(), replace(base(), **{name: EXECUTION_CHANGES[name]})
    assert a.default_out() == b.default_out()
    assert a.identity() == b.identity()
    assert a.sections()["execution"] != b.sections()["execution"]


@pytest.mark.parametrize("name", sorted(IDENTITY_CHANGES))
def test_identity_settings_change_the_folder(name):
    a, b = base(), replace(base(), **{name: IDENTITY_CHANGES[name]})
    assert a.identity() != b.identity()
    assert a.default_out() != b.default_out()


def test_base_url_is_never_identity():
    # where a model is served (a spawned `vpo serve`'s port, a user's server moved to another host)
    # is how the run ran; the served model's name is the identity
    hf = base()
    assert hf.identity() == replace(hf, base_url="http://127.0.0.1:1/v1").identity()
    oa = EvolveConfig(task="maze", model="openai:m", base_url="http://a/v1")
    assert oa.identity() == replace(oa, base_url="http://b/v1").identity()
    assert oa.default_out() == replace(oa, base_url="http://b/v1").default_out()
    assert oa.identity() != replace(oa, model="openai:n").identity()
    assert oa.sections()["execution"]["base_url"] == "http://a/v1"


def test_empty_template_args_keep_older_identities():
    assert "chat_template_args" not in base().identity()["sampling"]
    assert base(chat_template_args={"enable_thinking": False}).identity()["sampling"]["chat_template_args"] == {
        "enable_thinking": False}


def test_request_only_model_args_are_not_identity():
    oa = EvolveConfig(task="maze", model="openai:m", base_url="http://a/v1")
    assert oa.identity() == replace(oa, model_args={"timeout": 5, "api_key": "k"}).identity()
    assert oa.identity() != replace(oa, model_args={"reasoning_effort": "low"}).identity()


def test_identity_is_the_run_rule_plus_the_search():
    """The task / model / sampling sections are `vpo run`'s (RunConfig.identity of the canonical run
    sections), so the two commands cannot drift apart on what a run is."""
    from vpo_harness.benchmarks.maze import Maze
    from vpo_harness.harness.eval.runner import canonical_config

    cfg = base(temperature=0.5, limit=3)
    run = canonical_config(cfg.run_config(), Maze())
    assert cfg.identity() == {**run.identity(), "evolve": cfg.evolve_identity()}
    assert run.sampling.n == cfg.iterations + 1 and run.sampling.ks == (1,)
    assert set(cfg.identity()) == {"task", "model", "sampling", "evolve"}


def test_spellings_and_defaults_name_one_folder(monkeypatch):
    """A zoo model's name, its folder (relative, absolute) and an unset temperature / top-p vs the
    task's default are one run: one identity, one folder; the zoo model's trained prompt style and
    budget are the same as given explicitly."""
    from vpo_harness.benchmarks.maze import Maze
    from vpo_harness.harness.core.models.zoo import TINY_MAZE_DEFAULTS
    from vpo_harness.harness.core.paths import BUNDLED_CHECKPOINTS

    monkeypatch.chdir(BUNDLED_CHECKPOINTS.parent)
    plain = EvolveConfig(task="maze", model="hf:maze-tiny-vpo")
    for model in (f"hf:{BUNDLED_CHECKPOINTS / 'maze-tiny-vpo'}", "hf:checkpoints/maze-tiny-vpo", "hf:maze-tiny-vpo"):
        spelled = EvolveConfig(task="maze", model=model, temperature=Maze.default_temperature,
                               top_p=Maze.default_top_p, prompt_style=TINY_MAZE_DEFAULTS.prompt_style,
                               max_tokens=TINY_MAZE_DEFAULTS.max_tokens_single)
        assert spelled.identity() == plain.identity() and spelled.default_out() == plain.default_out(), model
    assert plain.identity()["model"]["spec"] == "hf:maze-tiny-vpo"
    assert plain.identity()["sampling"]["temperature"] == Maze.default_temperature
    assert plain.default_out() != replace(plain, temperature=0.5).default_out()


#: the folder names the code before canonical evolve identities gave these commands (computed with
#: it): frozen, because folders of those names exist and must still be found (legacy_out)
LEGACY_NAMES = [
    (dict(model="hf:maze-tiny-vpo", prompt_style="moves", max_tokens=256), "evo-maze-maze-tiny-vpo-evolve-m1-50e0e106"),
    (dict(model="hf:maze-tiny-vpo"), "evo-maze-maze-tiny-vpo-evolve-m1-7e31313f"),
    (dict(model="openai:scripted", base_url="http://x/v1", prompt_mode="task", m=3, iterations=6, limit=3),
     "evo-maze-scripted-task-m3-256ea81b"),
    (dict(model="openai:scripted", base_url="http://x/v1", prompt_mode="prefix", allow_zero_parents=False,
          chat_template_args={"enable_thinking": False}, temperature=0.5, cut="plateau", lag=2),
     "evo-maze-scripted-prefix-m1-0a5cbc54"),
]


@pytest.mark.parametrize("kw, name", LEGACY_NAMES)
def test_legacy_names_are_the_names_older_folders_have(kw, name):
    cfg = EvolveConfig(task="maze", **kw)
    assert str(cfg.legacy_out()) == f"runs/{name}"
    assert cfg.default_out() != cfg.legacy_out()  # folder names changed: the fallback is needed


def test_a_new_setting_lands_in_a_run_section_by_its_name():
    """EvolveConfig's fields named as `vpo run` settings are sorted into RunConfig's sections by the
    same table RunConfig.of reads (flat_fields), not by a second list."""
    from vpo_harness.harness.core.config import flat_fields

    where = flat_fields()
    for sec in ("task", "model", "sampling"):
        assert SECTIONS[sec] and all(where[name][0] == sec for name in SECTIONS[sec])
    assert {"out", "base_url", "concurrency", "progress"} <= set(SECTIONS["execution"])
