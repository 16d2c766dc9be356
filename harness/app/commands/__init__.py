"""The `vpo` subcommands: one module per command, each with ``register(subparsers)`` and ``run(args)``.

Adding a command is one module plus one line in :data:`COMMANDS`; ``harness/app/cli.py`` only dispatches.
Command modules import their heavy dependencies (runner, training, plots) inside ``run`` so
``vpo --help`` stays fast and a broken optional part never hides the other commands.
"""
from __future__ import annotations

import argparse
import importlib
from types import ModuleType

#: subcommand modules under harness.app.commands, in `vpo --help` order
COMMANDS: tuple[str, ...] = ("run", "ls", "show", "plot", "compare", "report", "rescore", "export", "import_samples", "train", "export_verl",
                             "demo", "evolve", "serve", "view", "cache")


def load(name: str) -> ModuleType:
    return importlib.import_module(f"vpo_harness.harness.app.commands.{name}")


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions and examples as written (line breaks kept); every option with a real default says
    it (``(default: 10)``), unless its help already mentions its default."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if _has_default(action) and "default" not in text:
            text = f"{text} (default: %(default)s)"
        return text


def _has_default(action: argparse.Action) -> bool:
    d = action.default  # 0 is a default worth showing, False (a store_true flag) is not
    empty = d is None or d is False or d is argparse.SUPPRESS or (isinstance(d, (dict, list, tuple, str)) and not d)
    return bool(action.option_strings) and not empty


def _finish_help(parser: argparse.ArgumentParser, mod: ModuleType) -> None:
    """The same help layout for every command: the module's first docstring line as description when
    the command has none, and its ``EXAMPLES`` (if any) as an epilog."""
    parser.formatter_class = HelpFormatter
    for action in parser._actions:  # argparse prints no help line at all when help is None
        if action.help is None and _has_default(action):
            action.help = "default: %(default)s"
    if parser.description is None and mod.__doc__:
        parser.description = mod.__doc__.strip().splitlines()[0]
    examples = getattr(mod, "EXAMPLES", None)
    if examples and parser.epilog is None:
        parser.epilog = "examples:\n" + "\n".join("  " + ln for ln in examples.strip().splitlines())


def register_all(subparsers: argparse._SubParsersAction) -> None:
    """Register every command; each sets ``func=run`` on its parser."""
    for name in COMMANDS:
        mod = load(name)
        parser = mod.register(subparsers)
        parser.set_defaults(func=mod.run)
        _finish_help(parser, mod)
