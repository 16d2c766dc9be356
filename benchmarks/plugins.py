"""Tasks from outside the package: a user's task is loaded by reference and then treated as a
built-in one by every command, with no line to add to ``benchmarks.REGISTRY``.

A task reference (``--task``) is one of:

- ``package.module:Class``: an importable module and the task class in it;
- ``path/to/tasks.py:Class`` or ``path/to/tasks.py``: a Python file (the bare file when it defines
  exactly one task class). The path is made absolute when a run records it, so `vpo show`, `view`,
  `rescore` ... find the file again from any folder;
- a name that an installed package registers under the ``vpo_harness.tasks`` entry-point group
  (``[project.entry-points."vpo_harness.tasks"] mytask = "mypkg.tasks:MyTask"``): then it is listed
  by `vpo ls` and used by name, as the built-in tasks are (a built-in name wins over a plugin's).

The class must subclass :class:`vpo_harness.benchmarks.base.Benchmark` and implement its abstract
methods; a class that does not is refused in one line naming what is missing.
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import sys
from importlib.metadata import entry_points
from pathlib import Path

from vpo_harness.benchmarks.base import Benchmark

#: the entry-point group an installed package registers its tasks under
ENTRY_POINT_GROUP = "vpo_harness.tasks"
#: class attributes of the protocol a task must set (the methods are Benchmark's abstract ones)
REQUIRED_ATTRIBUTES = ("name", "component_names")


def is_reference(name: str) -> bool:
    """Whether ``--task`` names a module or file (``mod:Class``, ``file.py``) rather than a registered task."""
    return ":" in name or name.endswith(".py")


def _split(ref: str) -> tuple[str, str | None]:
    """(module or file, class name or None)."""
    target, sep, attr = ref.rpartition(":")
    return (target, attr or None) if sep else (ref, None)


def _is_file(target: str) -> bool:
    return target.endswith(".py") or "/" in target or "\\" in target


def canonical_reference(name: str) -> str:
    """The reference as a run records it: a file path made absolute; anything else unchanged."""
    if not is_reference(name):
        return name
    target, attr = _split(name)
    if not _is_file(target):
        return name
    path = str(Path(target).expanduser().resolve())
    return f"{path}:{attr}" if attr else path


def entry_point_tasks() -> dict[str, str]:
    """Task name -> ``module:Class`` of every installed package's ``vpo_harness.tasks`` entry point."""
    return {ep.name.lower(): ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


def _module_of_file(path: Path, ref: str):
    if not path.is_file():
        raise FileNotFoundError(f"task {ref}: no such file {path}")
    # one module name per file, so a second load in this process reuses the first (one class object)
    mod_name = "vpo_task_plugin_" + hashlib.sha256(str(path).encode()).hexdigest()[:16]
    if mod_name in sys.modules:
        return sys.modules[mod_name]
    spec = importlib.util.spec_from_file_location(mod_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"task {ref}: {path} cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[mod_name]
        raise
    return module


def load_reference(ref: str) -> type[Benchmark]:
    """The task class a reference names, checked against the protocol."""
    target, attr = _split(ref)
    if _is_file(target):
        module = _module_of_file(Path(target).expanduser().resolve(), ref)
    else:
        try:
            module = importlib.import_module(target)
        except ModuleNotFoundError as exc:
            if exc.name and target.startswith(exc.name):
                raise KeyError(f"task {ref}: no module {exc.name!r} (is its package installed, or on PYTHONPATH?)") from exc
            raise
    if attr is None:
        found = [c for c in vars(module).values() if inspect.isclass(c) and issubclass(c, Benchmark)
                 and c is not Benchmark and c.__module__ == module.__name__]
        if len(found) != 1:
            what = "no task class" if not found else f"{len(found)} task classes ({', '.join(c.__name__ for c in found)})"
            raise KeyError(f"task {ref}: the file defines {what}; name one as {target}:CLASS")
        cls = found[0]
    else:
        cls = getattr(module, attr, None)
        if cls is None:
            raise KeyError(f"task {ref}: {target} has no attribute {attr!r}")
    check_protocol(cls, ref)
    return cls


def check_protocol(cls: object, ref: str) -> None:
    """One line naming what a task class lacks of the protocol (benchmarks/base.py)."""
    if not (inspect.isclass(cls) and issubclass(cls, Benchmark)):
        raise ValueError(f"task {ref}: {getattr(cls, '__name__', cls)!s} is not a subclass of "
                        "vpo_harness.benchmarks.base.Benchmark (the task protocol)")
    missing = sorted(getattr(cls, "__abstractmethods__", ()))
    if missing:
        raise ValueError(f"task {ref}: {cls.__name__} lacks the method{'s' if len(missing) > 1 else ''} "
                        f"{', '.join(missing)} of the task protocol (vpo_harness/benchmarks/base.py)")
    attrs = [a for a in REQUIRED_ATTRIBUTES if not hasattr(cls, a)]
    if attrs:
        raise ValueError(f"task {ref}: {cls.__name__} lacks the class attribute{'s' if len(attrs) > 1 else ''} "
                        f"{', '.join(attrs)} of the task protocol (vpo_harness/benchmarks/base.py)")
