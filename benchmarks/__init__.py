"""Benchmark registry with lazy loading: importing this package imports no task module."""
from __future__ import annotations

import importlib
from typing import Any

from vpo_harness.benchmarks import plugins
from vpo_harness.benchmarks.base import Benchmark, DataError, Problem
from vpo_harness.harness.core.suggest import unknown

#: task name -> "module:Class"; modules are imported on first use only
REGISTRY: dict[str, str] = {
    "maze": "vpo_harness.benchmarks.maze:Maze",
    "musique": "vpo_harness.benchmarks.musique:MuSiQue",
    "eureqa": "vpo_harness.benchmarks.eureqa:Eureqa",
    "toolrl": "vpo_harness.benchmarks.toolrl:ToolRL",
    "livecodebench": "vpo_harness.benchmarks.livecodebench:LiveCodeBench",
}


def _registered() -> dict[str, str]:
    """The built-in tasks and those installed packages register (a built-in name wins)."""
    return {**plugins.entry_point_tasks(), **REGISTRY}


def task_names() -> list[str]:
    return sorted(_registered())


def get_task(name: str, **options: Any) -> Benchmark:
    """Instantiate a task: a registered name, or a reference to a user's task class
    (``mod:Class``, ``file.py[:Class]``: benchmarks/plugins.py); unknown names list the known ones."""
    return task_class(name)(**options)


def task_class(name: str) -> type[Benchmark]:
    """A task's class, not instantiated: its class-level settings (the paper's sampling defaults)
    without building the task (a sandbox pool, a data index)."""
    if plugins.is_reference(name):
        return plugins.load_reference(name)
    key = name.lower()
    registered = REGISTRY if key in REGISTRY else _registered()  # entry points are scanned only when needed
    if key not in registered:
        raise KeyError(unknown("task", name, sorted(registered)) + " (or a task of your own: --task module:Class "
                       "or --task path/to/file.py)")
    if key not in REGISTRY:  # an installed package's task: checked against the protocol as a reference is
        return plugins.load_reference(registered[key])
    module_name, cls_name = REGISTRY[key].split(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:
            raise KeyError(f"task {name!r} is registered but its module {module_name} is not available") from exc
        raise
    return getattr(module, cls_name)


__all__ = ["Benchmark", "DataError", "Problem", "REGISTRY", "get_task", "task_class", "task_names"]
