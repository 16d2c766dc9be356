"""One parser for training flags (training/flags.py): a config dataclass's fields are its flags.

A small dataclass stands in for a trainer's config in the fast tests: a field added to it becomes a
flag with its type and default, without touching any parser. The trainers' own configs and `vpo
train` are checked where it matters: booleans refuse a misspelling in one line, and `vpo train` left
alone builds exactly the dataclasses' defaults.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Any

import pytest

from vpo_harness.training.flags import config_from_args, field_flags, main_parser, parse_bool


@dataclass
class Toy:
    steps: int = 80                 # optimizer steps
    lr: float = 1e-4
    augment: bool = True
    name: str = "maze"
    limit: int | None = None
    #: keyword arguments, k=v,...
    extra: dict[str, Any] = field(default_factory=dict)
    ks: list[int] = field(default_factory=lambda: [1, 2])


def test_parse_bool_words() -> None:
    for word in ("true", "TRUE", "1", "yes", "on"):
        assert parse_bool(word) is True
    for word in ("false", "False", "0", "no", "off"):
        assert parse_bool(word) is False
    for word in ("ture", "", "2", "y"):
        with pytest.raises(argparse.ArgumentTypeError, match="expected true or false"):
            parse_bool(word)


def test_every_field_is_a_flag_with_its_type_default_and_comment() -> None:
    p, flags = main_parser(Toy, "toy")
    assert [f.flag for f in flags] == ["--steps", "--lr", "--augment", "--name", "--limit", "--extra", "--ks"]
    assert {f.field: f.doc for f in flags}["steps"] == "optimizer steps"
    assert {f.field: f.doc for f in flags}["extra"] == "keyword arguments, k=v,..."
    assert config_from_args(Toy, p.parse_args([]), flags) == Toy()
    cfg = config_from_args(Toy, p.parse_args(["--steps", "3", "--lr", "0.5", "--augment", "false", "--limit", "7",
                                              "--extra", "a=1,b=x", "--ks", "4,8"]), flags)
    assert cfg == Toy(steps=3, lr=0.5, augment=False, limit=7, extra={"a": 1, "b": "x"}, ks=[4, 8])
    assert config_from_args(Toy, p.parse_args(["--augment"]), flags).augment is True  # alone: true


def test_a_misspelt_boolean_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    p, _ = main_parser(Toy, "toy")
    with pytest.raises(SystemExit) as exc:
        p.parse_args(["--augment", "ture"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and len(err.strip().splitlines()) == 1
    assert "argument --augment: expected true or false, got 'ture'" in err


def test_prefix_rename_and_skip() -> None:
    flags = field_flags(Toy, prefix="sft_", unprefixed={"name"}, rename={"lr": "rl_lr"}, skip={"extra", "ks"})
    assert [f.dest for f in flags] == ["sft_steps", "rl_lr", "sft_augment", "name", "sft_limit"]


def test_a_type_without_a_command_line_form_is_an_error_naming_the_field() -> None:
    @dataclass
    class Odd:
        pair: tuple[int, str] = (1, "a")

    with pytest.raises(TypeError, match="Odd.pair: no command-line form"):
        field_flags(Odd)


def test_the_trainers_refuse_ture_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    from vpo_harness.training import rl, sft, trl_vpo

    for mod in (rl, sft, trl_vpo):
        with pytest.raises(SystemExit) as exc:
            mod.main(["--augment", "ture"])
        err = capsys.readouterr().err
        assert exc.value.code == 2 and len(err.strip().splitlines()) == 1, (mod.__name__, err)
        assert "expected true or false, got 'ture'" in err


def _train_args(argv: list[str]) -> argparse.Namespace:
    from vpo_harness.harness.app.cli import build_parser, parse_args

    return parse_args(build_parser(), ["train", *argv])


def test_vpo_train_takes_its_defaults_from_the_dataclasses() -> None:
    """Nothing given: the native SFT and RL configs and the TRL config are their dataclasses' defaults
    (``--threads``, ``--rl-steps``, ``--prompts-per-step`` are not restated by the command)."""
    from vpo_harness.training.engines import sections
    from vpo_harness.training.rl import RLConfig
    from vpo_harness.training.sft import SFTConfig
    from vpo_harness.training.trl_vpo import TRLVPOConfig

    args = _train_args([])
    secs = sections()
    sft, rl = secs["native"]
    assert sft.config(args) == SFTConfig()
    assert rl.config(args) == RLConfig()
    assert secs["trl"][0].config(args) == TRLVPOConfig()
    given = _train_args(["--threads", "5", "--sft-steps", "7", "--rl-steps", "3", "--sobol", "--augment", "false",
                         "--kl-coef", "0.01"])
    assert sft.config(given) == SFTConfig(threads=5, steps=7, augment=False)
    assert rl.config(given) == RLConfig(threads=5, steps=3, sobol=True, augment=False, kl_coef=0.01)
    assert secs["trl"][0].config(given) == TRLVPOConfig(threads=5, steps=3, sobol=True, augment=False, beta=0.01)


def test_vpo_train_help_names_each_engines_default(capsys: pytest.CaptureFixture[str]) -> None:
    from vpo_harness.training.rl import RLConfig
    from vpo_harness.training.trl_vpo import TRLVPOConfig

    with pytest.raises(SystemExit):
        _train_args(["--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert f"--rl-steps RL_STEPS default native rl {RLConfig().steps}, trl {TRLVPOConfig().steps}" in out
    assert "--top-p TOP_P trl; default 1.0" in out
