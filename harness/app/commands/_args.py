"""Argument types shared by several commands."""
from __future__ import annotations

import argparse

from vpo_harness.harness.core.models import add_chat_template_args as add_model_chat_template_args, kv_arg


TASK_HELP = ("task: a name (see `vpo ls`), or a task of your own: package.module:Class, path/to/file.py[:Class] "
             "(docs/usage.md#your-own-task)")


def task_ref(text: str) -> str:
    """``--task`` as a run records it: a name, or a task reference with a file path made absolute
    (so later commands find the file from any folder)."""
    from vpo_harness.benchmarks.plugins import canonical_reference

    return canonical_reference(text)


def int_list(text: str) -> tuple[int, ...]:
    """``"1,2,4"`` -> ``(1, 2, 4)``; argparse turns the error into one usage line."""
    try:
        vals = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers like 1,2,4,8, got {text!r}")
    if not vals:
        raise argparse.ArgumentTypeError("expected at least one k")
    return vals


def tau_list(text: str) -> tuple[float, ...]:
    """``"0.1,0.5,0.9"`` -> Cover@tau thresholds, each in (0, 1]."""
    try:
        vals = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated rates like 0.1,0.5,0.9, got {text!r}")
    bad = [v for v in vals if not 0.0 < v <= 1.0]
    if not vals or bad:
        raise argparse.ArgumentTypeError(f"each tau must be in (0, 1], got {text!r}")
    return vals


#: ``"k=v,k2=v2"`` with int/float/bool coercion (lm-eval's ``--model_args`` convention): the one parser
kv = kv_arg


def add_unsafe_sandbox(p: argparse.ArgumentParser) -> None:
    """``--unsafe-sandbox`` on every command that grades generated code."""
    p.add_argument("--unsafe-sandbox", action="store_true",
                   help="grade generated code even where the sealed sandbox (namespaces, pivot_root, "
                        "seccomp) cannot be set up: rlimits and a separate uid only (no per-candidate memory budget); recorded in results")


def apply_unsafe_sandbox(args: argparse.Namespace) -> None:
    if getattr(args, "unsafe_sandbox", False):
        from vpo_harness.harness.core.sandbox import allow_unsafe

        allow_unsafe(True)


def add_chat_template_args(p: argparse.ArgumentParser) -> None:
    """The shared ``--chat-template-args`` (vpo_harness.harness.core.models), recorded as part of the run."""
    add_model_chat_template_args(p, ". Part of the run")


def add_cache_flag(p: argparse.ArgumentParser) -> None:
    """``--cache / --no-cache`` on every command that samples chains through the runner (run, demo)."""
    p.add_argument("--cache", action=argparse.BooleanOptionalAction, default=None,
                   help="reuse chains from the generation cache (generations/ under $VPO_CACHE, else "
                        "~/.cache/vpo-harness) and store new ones; default: on for backends that sample each chain from "
                        "its own seed (hf, vllm, mock), off for servers (openai). See `vpo cache`")
