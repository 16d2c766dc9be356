"""A mistyped flag is answered by the subcommand it was given to: its usage line, the unknown
argument and the flag probably meant (argparse printed the top-level `vpo` usage before)."""
from __future__ import annotations

import pytest

from vpo_harness.harness.app.cli import main


def test_mistyped_flag_prints_the_subcommand_usage(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["run", "--task", "maze", "--model", "mock:moves", "--tempreature", "0.5"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: vpo run ") and "--task TASK" in err
    assert err.strip().splitlines()[-1] == ("vpo run: error: unrecognized arguments: --tempreature 0.5 "
                                            "(did you mean --temperature?)")


def test_unknown_flag_without_a_close_match_and_other_commands(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit):
        main(["evolve", "--task", "maze", "--model", "openai:m", "--zzzz"])
    err = capsys.readouterr().err
    assert err.startswith("usage: vpo evolve ")
    assert err.strip().splitlines()[-1] == "vpo evolve: error: unrecognized arguments: --zzzz"


def test_unknown_flag_before_any_subcommand_is_the_top_level_usage(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit):
        main(["--zzzz", "run"])
    assert capsys.readouterr().err.startswith("usage: vpo ")


def test_a_bad_task_args_entry_names_the_task_flag(capsys) -> None:
    """`--task-args` shares the k=v parser of `--model-args`; its error names the flag given, not
    model_args."""
    from vpo_harness.harness.app.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["run", "--task", "maze", "--model", "mock:x", "--task-args", "reward_mode"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "argument --task-args: bad entry 'reward_mode': expected key=value" in err and "model_args" not in err
