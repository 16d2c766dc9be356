"""`vpo serve`: one local model behind an OpenAI-compatible HTTP API (the server is search/serve.py)."""
from __future__ import annotations

import argparse
import sys
from typing import Any, Sequence

from harness.commands._args import kv


def add_serve_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, help="hf:PATH_OR_ZOO | vllm:ID_OR_PATH")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--host", default="127.0.0.1", help="default loopback only")
    p.add_argument("--model-args", type=kv, default={})
    p.add_argument("--served-name", default=None, help="model id reported by /v1/models (default: the spec)")
    p.add_argument("--max-batch", type=int, default=64, help="most sequences generated together")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")


def register(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("serve", help="serve a local model over an OpenAI-compatible HTTP API")
    add_serve_arguments(p)
    return p


def run(args: argparse.Namespace) -> int:
    from search.serve import serve

    return serve(args.model, host=args.host, port=args.port, model_args=args.model_args,
                 served_name=args.served_name, max_batch=args.max_batch, threads=args.threads)


def serve_main(argv: Sequence[str] | None = None) -> int:
    """The `vpo serve` child that `vpo evolve` starts (``python -m harness.serve``)."""
    p = argparse.ArgumentParser(prog="vpo serve")
    add_serve_arguments(p)
    args = p.parse_args(argv)
    try:
        return run(args)
    except (ValueError, KeyError, FileNotFoundError, RuntimeError) as exc:
        print(f"vpo serve: error: {exc}", file=sys.stderr)
        return 2
