"""One settings path from the command line: one ``k=v`` parser behind every command's key=value
flags, and `vpo run` builds its RunConfig without writing back onto the parsed flags."""
from __future__ import annotations

import argparse
import copy

import pytest

from vpo_harness.harness.app.cli import build_parser
from vpo_harness.harness.core.models import kv_arg

KV_FLAGS = ("model_args", "task_args", "chat_template_args", "trl_args", "lora")


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def test_every_key_value_flag_uses_the_one_parser() -> None:
    seen = []
    for name, cmd in _subparsers(build_parser()).items():
        cmd.format_help()   # `vpo train` adds its config flags when it is parsed or its help shown
        for action in cmd._actions:
            if action.dest in KV_FLAGS:
                seen.append(f"{name} --{action.dest}")
                assert action.type is kv_arg, f"vpo {name} --{action.dest.replace('_', '-')} parses k=v itself"
    # the commands that take them (serve's flags come from search/serve.py, train's from its command)
    for expected in ("run --model_args", "run --chat_template_args", "evolve --task_args", "serve --model_args",
                     "serve --chat_template_args", "train --trl_args", "train --lora", "export-verl --task_args"):
        assert expected in seen, expected


def test_bad_entry_is_one_usage_line() -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="expected key=value"):
        kv_arg("a=1,b")
    assert kv_arg("a=1, b=true ,c=x") == {"a": 1, "b": True, "c": "x"}


def test_build_config_reads_the_flags_only(capsys: pytest.CaptureFixture) -> None:
    from vpo_harness.harness.app.commands.run import build_config

    args = build_parser().parse_args(["run", "--task", "maze", "--model", "hf:maze-tiny-vpo", "--protocol", "paper",
                                      "--task-args", "parse=lenient"])
    before = copy.deepcopy(vars(args))
    cfg = build_config(args)
    assert vars(args) == before  # the preset's and the model's settings went into cfg, not onto args
    s = cfg.sampling
    assert (s.m, s.n, s.temperature, s.top_p, s.max_tokens) == (3, 10, 0.7, 1.0, 1024)
    assert s.chat_template_args == {"enable_thinking": False} and cfg.task.options == {"parse": "lenient"}
    assert cfg.task.prompt_style == "compact" and cfg.execution.protocol == "paper"
    assert "--protocol paper for maze" in capsys.readouterr().err
