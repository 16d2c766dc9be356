"""Every task declares its ``--task-args``; unknown names and bad choices are one clear line."""
from __future__ import annotations

import pytest

from vpo_harness.benchmarks import get_task, task_names


@pytest.mark.parametrize("name", task_names())
def test_unknown_task_option_is_refused_with_the_valid_names(name):
    with pytest.raises(ValueError) as info:
        get_task(name, foo=1)
    msg = str(info.value)
    assert "\n" not in msg and "foo" in msg and name in msg
    spec = type(get_task(name)).options_spec
    assert spec, f"task {name} declares no options_spec"
    for opt in spec:
        assert opt in msg


@pytest.mark.parametrize("name", task_names())
def test_defaults_are_filled_and_recorded(name):
    task = get_task(name)
    spec = type(task).options_spec
    assert set(task.options) <= set(spec)
    assert all(task.options[k] == o.default for k, o in spec.items() if k in task.options)
    assert task.describe()["options"] == task.options


def test_choices_are_checked():
    with pytest.raises(ValueError, match="reward_mode='bogus'.*linear"):
        get_task("maze", reward_mode="bogus")
    with pytest.raises(ValueError, match="align"):
        get_task("toolrl", align="sloppy")
    assert get_task("maze", reward_mode="linear").reward_mode == "linear"
