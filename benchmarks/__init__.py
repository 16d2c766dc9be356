"""Benchmark registry with lazy loading: importing this package imports no task module."""
from __future__ import annotations

import importlib
from typing import Any

from benchmarks.base import Benchmark, DataError, Problem
from harness.core.suggest import unknown

#: task name -> "module:Class"; modules are imported on first use only
REGISTRY: dict[str, str] = {
    "maze": "benchmarks.maze:Maze",
    "musique": "benchmarks.musique:MuSiQue",
    "eureqa": "benchmarks.eureqa:Eureqa",
    "toolrl": "benchmarks.toolrl:ToolRL",
    "livecodebench": "benchmarks.livecodebench:LiveCodeBench",
}


def task_names() -> list[str]:
    return sorted(REGISTRY)


def get_task(name: str, **options: Any) -> Benchmark:
    """Instantiate a registered task; unknown names list the known ones."""
    return task_class(name)(**options)


def task_class(name: str) -> type[Benchmark]:
    """A registered task's class, not instantiated: its class-level settings (the paper's sampling
    defaults) without building the task (a sandbox pool, a data index)."""
    key = name.lower()
    if key not in REGISTRY:
        raise KeyError(unknown("task", name, task_names()))
    module_name, cls_name = REGISTRY[key].split(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:
            raise KeyError(f"task {name!r} is registered but its module {module_name} is not available") from exc
        raise
    return getattr(module, cls_name)


__all__ = ["Benchmark", "DataError", "Problem", "REGISTRY", "get_task", "task_class", "task_names"]
