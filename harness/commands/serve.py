"""`vpo serve`: one local model behind an OpenAI-compatible HTTP API.

The server is search/serve.py; ``vllm:`` specs get vLLM's own server (search/vllm_serve.py)."""
from __future__ import annotations

import argparse
import sys
from typing import Any, Sequence

from harness.commands._args import kv


def _positive(cast: Any) -> Any:
    def parse(text: str) -> Any:
        try:
            v = cast(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
        if not v > 0:
            raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
        return v

    return parse


def add_serve_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, help="hf:PATH_OR_ZOO | vllm:ID_OR_PATH (vLLM's own server) | mock:MODE")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--host", default="127.0.0.1", help="default loopback only")
    p.add_argument("--model-args", type=kv, default={},
                   help="backend arguments; for vllm: the flags of vLLM's server (tensor_parallel_size=2,"
                        "max_model_len=4096, dtype=bfloat16, seed=0, enforce_eager=true ...)")
    p.add_argument("--served-name", default=None, help="model id reported by /v1/models (default: the spec)")
    p.add_argument("--chat-template-args", type=kv, default={}, metavar="K=V,...",
                   help="chat template arguments for every request (e.g. enable_thinking=false); a request's "
                        "chat_template_kwargs field is merged over them")
    p.add_argument("--max-batch", type=int, default=64, help="most sequences generated together (not vllm)")
    p.add_argument("--threads", type=_positive(int), default=None,
                   help="torch CPU threads (default: usable cores - 1, at least 1; not vllm)")
    p.add_argument("--max-body-mb", type=_positive(float), default=4.0,
                   help="largest request body in MiB; bigger ones get a 413 before they are read (not vllm)")
    p.add_argument("--max-connections", type=_positive(int), default=512,
                   help="open connections and in-flight requests; more get a 503 (not vllm)")
    p.add_argument("--log", default=None, metavar="PATH", help="vllm: where vLLM's server writes its log "
                                                               "(default: a file in the temp folder)")


def register(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("serve", help="serve a local model over an OpenAI-compatible HTTP API")
    add_serve_arguments(p)
    return p


def run(args: argparse.Namespace) -> int:
    from search.serve import MiB, Limits, serve

    limits = Limits(max_body_bytes=int(args.max_body_mb * MiB), max_connections=args.max_connections)
    return serve(args.model, host=args.host, port=args.port, model_args=args.model_args,
                 served_name=args.served_name, max_batch=args.max_batch, threads=args.threads,
                 limits=limits, chat_template_args=args.chat_template_args, log_path=args.log)


def serve_main(argv: Sequence[str] | None = None) -> int:
    """The `vpo serve` child that `vpo evolve` starts (``python -m harness.serve``)."""
    p = argparse.ArgumentParser(prog="vpo serve")
    add_serve_arguments(p)
    args = p.parse_args(argv)
    try:
        return run(args)
    except (ValueError, KeyError, FileNotFoundError, RuntimeError, ImportError, OSError) as exc:
        print(f"vpo serve: error: {exc}", file=sys.stderr)
        return 2
