"""`vpo evolve`: evolutionary test-time search on OpenEvolve's engine (flags and code in search/cli.py)."""
from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    from search.cli import add_evolve_parser

    return add_evolve_parser(sub)


def run(args: argparse.Namespace) -> int:
    from search.cli import cmd_evolve

    return cmd_evolve(args)
