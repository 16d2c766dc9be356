"""`vpo serve`: one local model behind an OpenAI-compatible HTTP API.

The server is search/serve.py; ``vllm:`` specs get vLLM's own server (search/vllm_serve.py).

Its flags and ``python -m vpo_harness.search.serve`` (the child `vpo evolve` starts) live in search/serve.py too;
this module only registers them."""
from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    from vpo_harness.search.serve import add_serve_arguments

    p = sub.add_parser("serve", help="serve a local model over an OpenAI-compatible HTTP API")
    add_serve_arguments(p)
    return p


def run(args: argparse.Namespace) -> int:
    from vpo_harness.search.serve import serve_args

    return serve_args(args)
