"""`vpo`: run, inspect and plot best@k evaluations, train and demo the bundled policies.

Flags follow lm-evaluation-harness where they overlap: ``--model hf:PATH --model-args k=v,...``.
This module only dispatches: every subcommand is a module under ``harness/app/commands/`` registered by
one line in ``vpo_harness.harness.app.commands.COMMANDS``.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Sequence

from vpo_harness.harness.app.commands import register_all
from vpo_harness.harness.core.suggest import close_matches


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="vpo", description=__doc__.splitlines()[0])
    register_all(parser.add_subparsers(dest="command", required=True))
    return parser


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """``parse_args``, but an unknown flag after a subcommand is reported by that subcommand's parser:
    its usage line and, when one is close, the flag that was probably meant. (argparse hands unknown
    arguments up to the top-level parser, which printed ``vpo``'s usage for ``vpo run --tempreature``.)"""
    args, extras = parser.parse_known_args(argv)
    if extras:
        sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
        cmd = sub.choices.get(getattr(args, "command", None)) if sub is not None else None
        if cmd is None:
            parser.error(f"unrecognized arguments: {' '.join(extras)}")
        flags = [o for a in cmd._actions for o in a.option_strings if o.startswith("--")]
        near = [m for e in extras if e.startswith("-")
                for m in close_matches(e.split("=", 1)[0], flags, n=1, cutoff=0.75)]
        hint = f" (did you mean {', '.join(dict.fromkeys(near))}?)" if near else ""
        cmd.error(f"unrecognized arguments: {' '.join(extras)}{hint}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    from vpo_harness.harness.core.log import to_terminal
    from vpo_harness.harness.core.models.endpoints import ServerUnreachable

    to_terminal()  # the library's notes and warnings reach the terminal as the lines they always were
    args = parse_args(build_parser(), argv)
    try:
        return int(args.func(args) or 0)
    except ServerUnreachable as exc:  # before RuntimeError, its base class: the rows so far are kept
        print(f"vpo {args.command}: error: {exc}", file=sys.stderr)
        return 3
    except BrokenPipeError:  # before OSError, its base class
        # `vpo compare ... | head` closed the pipe: stop quietly, as Unix tools do; point stdout at
        # /dev/null so the interpreter's final flush does not raise a second time.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except (ValueError, KeyError, FileNotFoundError, RuntimeError, ImportError, OSError) as exc:
        # ImportError: an optional engine that is not installed (vllm); OSError: a path we cannot use
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"vpo {args.command}: error: {msg}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"vpo {args.command}: interrupted (runs are resumable: re-run the same command)", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
