"""`vpo serve`: one local model behind an OpenAI-compatible HTTP API (code in search/serve.py)."""
from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    from search.cli import add_serve_parser

    return add_serve_parser(sub)


def run(args: argparse.Namespace) -> int:
    from search.cli import cmd_serve

    return cmd_serve(args)
