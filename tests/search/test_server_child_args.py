"""The served child of `vpo evolve` gets its model and chat-template arguments as they are (JSON), not
as k=v text parsed again; and every command's --chat-template-args is one flag with one default."""
from __future__ import annotations

import argparse

import pytest

from vpo_harness.search.serve import parser, structured_args
from vpo_harness.search.server_process import CHILD_ARGS_FLAG, ManagedServer


def test_child_gets_the_args_with_their_types() -> None:
    model_args = {"tag": "a,b", "flag": "true", "n": 2, "dtype": "float64"}
    template = {"enable_thinking": False, "style": "x=y"}
    cmd = ManagedServer("mock:echo", model_args=model_args, chat_template_args=template, port=8011).command()
    assert cmd[1:3] == ["-m", "vpo_harness.search.serve"] and CHILD_ARGS_FLAG in cmd
    got = structured_args(parser().parse_args(cmd[3:]))
    assert got == {"model_args": model_args, "chat_template_args": template}
    assert "--model-args" not in cmd and "--chat-template-args" not in cmd
    plain = ManagedServer("mock:echo", port=8011).command()
    assert CHILD_ARGS_FLAG not in plain
    assert structured_args(parser().parse_args(plain[3:])) == {"model_args": {}, "chat_template_args": {}}


def test_user_flags_still_read_as_k_v() -> None:
    got = structured_args(parser().parse_args(["--model", "mock:echo", "--model-args", "n=2",
                                               "--chat-template-args", "enable_thinking=false"]))
    assert got == {"model_args": {"n": 2}, "chat_template_args": {"enable_thinking": False}}


def test_bad_child_json_is_one_usage_line(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit):
        parser().parse_args(["--model", "mock:echo", CHILD_ARGS_FLAG, '{"model_args": 3}'])
    assert "expected an object of model_args, chat_template_args objects" in capsys.readouterr().err


def test_chat_template_args_is_one_flag_everywhere() -> None:
    from vpo_harness.harness.app.cli import build_parser

    top = build_parser()
    subs = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction)).choices
    flags = {name: next(a for a in sp._actions if "--chat-template-args" in a.option_strings)
             for name, sp in {**subs, "python -m vpo_harness.search.serve": parser()}.items()
             if any("--chat-template-args" in a.option_strings for a in sp._actions)}
    assert {"run", "evolve", "train", "serve", "python -m vpo_harness.search.serve"} <= set(flags)
    assert {(f.default, f.type) for f in flags.values()} == {(None, flags["run"].type)}
