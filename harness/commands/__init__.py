"""The `vpo` subcommands: one module per command, each with ``register(subparsers)`` and ``run(args)``.

Adding a command is one module plus one line in :data:`COMMANDS`; ``harness/cli.py`` only dispatches.
Command modules import their heavy dependencies (runner, training, plots) inside ``run`` so
``vpo --help`` stays fast and a broken optional part never hides the other commands.
"""
from __future__ import annotations

import argparse
import importlib
from types import ModuleType

#: subcommand modules under harness.commands, in `vpo --help` order
COMMANDS: tuple[str, ...] = ("run", "ls", "show", "plot", "compare", "report", "rescore", "train", "export_verl",
                             "demo", "evolve", "serve")


def load(name: str) -> ModuleType:
    return importlib.import_module(f"harness.commands.{name}")


def register_all(subparsers: argparse._SubParsersAction) -> None:
    """Register every command; each sets ``func=run`` on its parser."""
    for name in COMMANDS:
        mod = load(name)
        parser = mod.register(subparsers)
        parser.set_defaults(func=mod.run)
