"""transformers ``generate`` as a Backend (CPU or GPU): the always-available reference backend.

Per-chain determinism (why the sampler is ours): ``generate(do_sample=True)`` draws every row from
one global RNG, so a chain's text would depend on which other chains shared its batch, on the batch
size and on resume order. Instead each batch row (one chain) owns a ``torch.Generator`` seeded with
that chain's seed (from ``vpo_harness.harness.core.seeding.derive_seed``). A logits processor applies temperature and
top-p, draws one uniform per step from the row's generator and picks the token by inverse CDF; it
returns a one-hot score so ``generate`` runs greedy (``do_sample=False``) and simply takes that token.
So chain c of problem p gives the same text alone, in any batch, or after a resume (up to
floating-point noise from padding, which can only matter when a draw lands on a CDF boundary).

Each chain is its own batch row (what ``num_return_sequences=k`` does internally, but it also lets
rows of different prompts share a left-padded batch). Stop strings end a row early (transformers'
``stop_strings``) and are trimmed from the text, as OpenAI-style servers do. The checkpoint's own
``generation_config`` sampling defaults (repetition_penalty, top_k...) are ignored on purpose: only
``SamplingConfig`` decides how we sample.
"""
from __future__ import annotations

import logging
import time
from typing import Any, Iterator, Sequence, cast

from vpo_harness.harness.core.models import zoo
from vpo_harness.harness.core.models.base import Backend, GenRequest, Generation, SamplingConfig, template_kwargs
from vpo_harness.harness.core.models.prefill import join
from vpo_harness.harness.core.models.prompting import rendered
from vpo_harness.harness.core.progress import step

_log = logging.getLogger(__name__)  # notes and warnings: the caller decides where they go (harness/core/log.py)


def resolve_model_path(model: str) -> str:
    """Zoo name -> converted folder; an existing path -> itself; an ``org/name`` hub id is left to
    transformers; anything else is refused at once with close matches (see :func:`zoo.resolve_local`)."""
    return zoo.resolve_local(model)


def _dtype_kwarg() -> str:
    """transformers renamed ``torch_dtype`` to ``dtype`` in 4.56; older ones would silently ignore it."""
    import transformers

    major, minor = (int(x) for x in transformers.__version__.split(".")[:2])
    return "dtype" if (major, minor) >= (4, 56) else "torch_dtype"


def resolve_device_dtype(device: str = "auto", dtype: str = "auto") -> tuple[str, str]:
    """(device, dtype) that ``auto`` means here: CUDA when there is one, and bfloat16 on CUDA,
    float32 elsewhere. One rule for loading the model and for the generation cache key, which is
    computed before (and, on a full hit, instead of) loading it."""
    import torch

    device = ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else str(device)
    if dtype == "auto":
        dtype = "bfloat16" if device.startswith("cuda") else "float32"
    return device, str(dtype)


def runtime_key(args: dict[str, Any]) -> dict[str, Any]:
    """What of the machine changes an hf chain's text: the device class (cpu, cuda, mps; not which
    GPU index), the resolved dtype and the versions of torch and transformers (their kernels and
    generate loop)."""
    import importlib.metadata as md

    device, dtype = resolve_device_dtype(str(args.get("device", "auto")), str(args.get("dtype", "auto")))
    return {"device": device.split(":", 1)[0], "dtype": dtype,
            "library": {pkg: md.version(pkg) for pkg in ("torch", "transformers")}}


class RowSampler:
    """Logits processor: per-row seeded temperature/top-p sampling, returned as a one-hot score."""

    def __init__(self, seeds: Sequence[int], temperature: float, top_p: float, device: Any) -> None:
        import torch

        self.temperature = float(temperature)
        self.top_p = float(top_p)
        self.generators = [torch.Generator(device=device).manual_seed(int(s)) for s in seeds]
        #: called with the number of rows after every decoding step (progress while a batch runs)
        self.on_step: Any = None
        #: the batch's ids (prompt and tokens so far) at the latest step: what an interrupt can still save
        self.seen: Any = None

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        self.seen = input_ids
        if self.on_step is not None:
            self.on_step(int(scores.shape[0]))

        if scores.shape[0] != len(self.generators):
            raise RuntimeError(f"RowSampler has {len(self.generators)} seeds for {scores.shape[0]} rows")
        logits = scores.float()
        if self.temperature <= 0.0:
            chosen = logits.argmax(dim=-1)
        else:
            probs = torch.softmax(logits / self.temperature, dim=-1)
            if self.top_p < 1.0:
                sorted_p, order = probs.sort(dim=-1, descending=True)
                before = sorted_p.cumsum(dim=-1) - sorted_p  # mass strictly above each token
                sorted_p = sorted_p.masked_fill(before >= self.top_p, 0.0)  # keeps >= 1 token
                probs = torch.zeros_like(probs).scatter(-1, order, sorted_p)
            cdf = probs.double().cumsum(dim=-1)
            u = torch.stack([torch.rand((), generator=g, device=probs.device, dtype=torch.float64) for g in self.generators])
            chosen = torch.searchsorted(cdf, (u * cdf[:, -1]).unsqueeze(-1)).squeeze(-1)
            chosen = chosen.clamp_(max=probs.shape[-1] - 1)
            # never pick a zero-probability token (cdf plateaus / rounding at the top end)
            bad = probs.gather(-1, chosen.unsqueeze(-1)).squeeze(-1) <= 0
            if bool(bad.any()):
                chosen = torch.where(bad, probs.argmax(dim=-1), chosen)
        out = torch.full_like(scores, float("-inf"))
        out.scatter_(-1, chosen.unsqueeze(-1), 0.0)
        return out


class BatchInterrupted(KeyboardInterrupt):
    """Ctrl-C inside a generate batch, carrying the rows that had already finished decoding.

    Why: a batch of a slow model can run for minutes, and its rows end at different steps (end of
    sequence, a stop string). A row that has ended has its final text, identical to what the whole
    batch would have returned, so it is handed on to be written; only the rows still decoding are
    lost. It is a KeyboardInterrupt, so every caller that does not know it still stops."""

    def __init__(self, finished: list[tuple[int, tuple[str, int, int, str]]]) -> None:
        super().__init__(f"interrupted; {len(finished)} finished rows of the batch kept")
        #: (row index in the batch, (text, prompt tokens, completion tokens, finish reason))
        self.finished = finished


class HFBackend(Backend):
    """``AutoModelForCausalLM.generate`` with left-padded batches of chains."""

    name = "hf"
    supports_prefill = True

    def __init__(
        self,
        model: str,
        *,
        device: str = "auto",
        dtype: str = "auto",
        batch_size: int = 16,
        trust_remote_code: bool = False,
        revision: str | None = None,
        attn_implementation: str | None = None,
    ) -> None:
        self.model_name = model
        self.path = resolve_model_path(model)  # a mistyped name fails here, before torch is imported
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.device, dtype = resolve_device_dtype(device, dtype)
        torch_dtype = getattr(torch, str(dtype), None)
        if not isinstance(torch_dtype, torch.dtype):
            raise ValueError(f"unknown dtype {dtype!r} (try float32, bfloat16, float16)")
        self.dtype = str(dtype)
        if int(batch_size) < 1:
            raise ValueError("batch_size must be >= 1")
        self.batch_size = int(batch_size)
        self.args = {"device": self.device, "dtype": self.dtype, "batch_size": self.batch_size,
                     "trust_remote_code": trust_remote_code, "revision": revision,
                     "attn_implementation": attn_implementation}
        extra: dict[str, Any] = {"trust_remote_code": trust_remote_code}
        if revision is not None:
            extra["revision"] = revision
        where = "" if self.path == model else f" ({self.path})"
        with step(f"loading {model}{where} with transformers on {self.device}, {self.dtype}"):
            tokenizer = AutoTokenizer.from_pretrained(self.path, **extra)
            if attn_implementation is not None:
                extra["attn_implementation"] = attn_implementation
            hf_model = AutoModelForCausalLM.from_pretrained(self.path, **{_dtype_kwarg(): torch_dtype}, **extra)
            self._setup(hf_model.to(self.device), tokenizer)
        #: the hub commit transformers loaded (None for a local folder): the generation cache keys a hub
        #: id by the commit its local refs named, and checks that this is the one that loaded
        self.loaded_revision: str | None = getattr(hf_model.config, "_commit_hash", None)

    @classmethod
    def from_model(cls, model: Any, tokenizer: Any, *, name: str = "in-memory", batch_size: int = 16) -> "HFBackend":
        """Wrap an already-loaded model (the trainer's policy, test models) without a folder."""
        self = cls.__new__(cls)
        self.model_name = name
        self.path = None
        self.device = str(next(model.parameters()).device)
        self.dtype = str(next(model.parameters()).dtype).replace("torch.", "")
        self.batch_size = int(batch_size)
        self.args = {"device": self.device, "dtype": self.dtype, "batch_size": self.batch_size}
        self._setup(model, tokenizer)
        return self

    def check_stop_strings(self, stops: Sequence[str]) -> None:
        """Raise ValueError naming the first stop string transformers' stop-string criteria cannot
        take with this tokenizer. Why: they are built inside ``generate``, for the whole batch, so a
        stop string a tokenizer cannot handle would fail every request batched with it; `vpo serve`
        asks here first and answers 400 for that request alone. Accepted lists are remembered."""
        key = tuple(stops)
        if not key or key in self._stops_ok:
            return
        import torch
        from transformers.generation.stopping_criteria import StopStringCriteria

        # a long tensor, as generate passes: torch types every factory's result as plain Tensor, and the
        # criteria's signature names the LongTensor subclass, so the type is stated here
        probe = cast("torch.LongTensor", torch.zeros((1, 1), dtype=torch.long))
        for i, stop in enumerate(key):
            try:
                StopStringCriteria(self.tokenizer, [stop])(probe, None)
            except Exception as exc:  # noqa: BLE001 - whatever the tokenizer raises is this stop string's fault
                raise ValueError(f"stop string {i} ({ascii(stop)[:80]}) cannot be used with this model's "
                                 f"tokenizer ({type(exc).__name__}: {str(exc)[:200]})") from None
        self._stops_ok.add(key)

    def _setup(self, model: Any, tokenizer: Any) -> None:
        model.eval()
        tokenizer.padding_side = "left"
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        self.model, self.tokenizer = model, tokenizer
        self._stops_ok: set[tuple[str, ...]] = set()  # stop lists check_stop_strings has accepted
        #: progress hook: called with a token count as decoding runs (the runner's token bar)
        self.on_tokens: Any = None
        ctx = getattr(model.config, "max_position_embeddings", None)
        self.context_len = int(ctx) if isinstance(ctx, int) and ctx > 0 else None
        self._warned_budget = False
        eos = model.generation_config.eos_token_id
        if eos is None:
            eos = tokenizer.eos_token_id
        self.eos_ids = set(eos if isinstance(eos, list) else [eos]) - {None}
        if tokenizer.eos_token_id is not None:
            self.eos_ids.add(tokenizer.eos_token_id)

    def describe(self) -> dict[str, Any]:
        import torch
        import transformers

        return {
            "backend": self.name,
            "model": self.model_name,
            "path": self.path,
            "args": dict(self.args),
            "sampler": "per-chain torch.Generator(seed) inverse-CDF, temperature then top-p",
            "library": {"transformers": transformers.__version__, "torch": torch.__version__},
        }

    def _prompt(self, req: GenRequest, sampling: SamplingConfig | None = None) -> tuple[str, bool]:
        """Rendered text (with the sampling's chat-template arguments) and whether the tokenizer should
        add special tokens (not when a chat template already wrote them)."""
        args = template_kwargs(sampling) if sampling is not None else {}
        return rendered(req.messages, self.tokenizer, args, prefix=req.prefix)

    def generate(self, requests: Sequence[GenRequest], sampling: SamplingConfig) -> Iterator[Generation]:
        rows: list[tuple[GenRequest, int, int]] = []
        for req in requests:
            if len(req.chain_indices) != len(req.seeds):
                raise ValueError(f"{req.problem_id}: {len(req.chain_indices)} chain indices but {len(req.seeds)} seeds")
            rows += [(req, c, s) for c, s in zip(req.chain_indices, req.seeds)]
        prompts: dict[int, tuple[str, bool]] = {}
        prefix_tokens: dict[int, int | None] = {}
        for req in requests:
            prompts[id(req)] = self._prompt(req, sampling)
            self._check_context(req, prompts[id(req)], sampling)
            prefix_tokens[id(req)] = (len(self.tokenizer(req.prefix, add_special_tokens=False)["input_ids"])
                                      if req.prefix else None)
        for start in range(0, len(rows), self.batch_size):
            batch = rows[start : start + self.batch_size]
            t0 = time.perf_counter()
            try:
                results = self._generate_batch([prompts[id(r)] for r, _, _ in batch], [s for _, _, s in batch], sampling)
            except BatchInterrupted as stop:  # hand on the rows that had ended, then stop
                for i, result in stop.finished:
                    yield _generation(batch[i], result, time.perf_counter() - t0, prefix_tokens[id(batch[i][0])])
                raise
            except Exception as exc:  # noqa: BLE001 - e.g. OOM or a too-long prompt: record, keep the run alive
                msg = f"{type(exc).__name__}: {exc}"[:500]
                for req, c, s in batch:
                    yield Generation(req.problem_id, c, "", error=msg, latency_s=time.perf_counter() - t0, extra={"seed": s},
                                     prefix=req.prefix)
                continue
            elapsed = time.perf_counter() - t0
            for row, result in zip(batch, results):
                yield _generation(row, result, elapsed, prefix_tokens[id(row[0])])

    def _check_context(self, req: GenRequest, prompt: tuple[str, bool], sampling: SamplingConfig) -> None:
        """A prompt longer than the model's context is a configuration error (every chain would be
        garbage), not a warning: say which problem, how long, and what to change."""
        if self.context_len is None:
            return
        n = len(self.tokenizer(prompt[0], add_special_tokens=prompt[1])["input_ids"])
        if n >= self.context_len:
            raise ValueError(
                f"{req.problem_id}: the prompt is {n} tokens, longer than {self.model_name}'s context of "
                f"{self.context_len}; use a shorter prompt style (--prompt-style compact) or a longer-context model")
        if n + sampling.max_tokens > self.context_len and not self._warned_budget:
            self._warned_budget = True
            
            _log.warning(f"[vpo] {self.model_name}: prompt ({n} tokens) + max tokens ({sampling.max_tokens}) exceed the "
                         f"context of {self.context_len}; completions may stop at the context end")

    def _generate_batch(self, prompts: list[tuple[str, bool]], seeds: list[int], sampling: SamplingConfig) -> list[tuple[str, int, int, str]]:
        import torch
        from transformers import GenerationConfig, LogitsProcessorList

        tok = self.tokenizer
        # one tokenizer call per add_special_tokens flavour keeps left padding consistent
        flags = {add for _, add in prompts}
        if len(flags) != 1:
            raise ValueError("mixed templated and plain prompts in one batch")
        enc = tok([p for p, _ in prompts], return_tensors="pt", padding=True, add_special_tokens=flags.pop())
        enc = {k: v.to(self.model.device) for k, v in enc.items()}
        gen_cfg = GenerationConfig(
            max_new_tokens=int(sampling.max_tokens),
            do_sample=False,
            num_beams=1,
            eos_token_id=sorted(self.eos_ids) or None,
            pad_token_id=tok.pad_token_id,
        )
        kwargs: dict[str, Any] = {}
        if sampling.stop:
            gen_cfg.stop_strings = list(sampling.stop)
            kwargs["tokenizer"] = tok
        sampler = RowSampler(seeds, sampling.temperature, sampling.top_p, self.model.device)
        sampler.on_step = self.on_tokens
        # generate() fills every option we leave unset from model.generation_config (a checkpoint's
        # repetition_penalty, top_k, ...). Sampling must be exactly SamplingConfig, comparable across
        # backends and checkpoints, so a neutral config stands in for the model's during the call.
        saved = self.model.generation_config
        self.model.generation_config = GenerationConfig(
            bos_token_id=saved.bos_token_id, eos_token_id=gen_cfg.eos_token_id, pad_token_id=tok.pad_token_id
        )
        prompt_len = enc["input_ids"].shape[1]
        prompt_counts = enc["attention_mask"].sum(dim=1).tolist()
        try:
            with torch.no_grad():
                out = self.model.generate(
                    **enc, generation_config=gen_cfg, logits_processor=LogitsProcessorList([sampler]), **kwargs
                )
        except KeyboardInterrupt as stop:
            raise BatchInterrupted(self._finished_rows(sampler.seen, prompt_len, prompt_counts, sampling)) from stop
        finally:
            self.model.generation_config = saved
        results = []
        for row, n_prompt in zip(out[:, prompt_len:].tolist(), prompt_counts):
            text, n_out, finish = self._finish_row(row, sampling)
            results.append((text, int(n_prompt), n_out, finish))
        return results

    def _finished_rows(self, seen: Any, prompt_len: int, prompt_counts: list[int],
                       sampling: SamplingConfig) -> list[tuple[int, tuple[str, int, int, str]]]:
        """The rows of an interrupted batch that had ended (an end-of-sequence token, or a stop string,
        after which generate only pads them), with the result the finished batch would have given."""
        if seen is None:  # interrupted before the first decoding step
            return []
        done = []
        for i, (row, n_prompt) in enumerate(zip(seen[:, prompt_len:].tolist(), prompt_counts)):
            ended = any(t in self.eos_ids for t in row)
            if not ended and sampling.stop:
                text = self.tokenizer.decode(row, skip_special_tokens=True)
                ended = any(s and s in text for s in sampling.stop)
            if ended:
                text, n_out, finish = self._finish_row(row, sampling)
                done.append((i, (text, int(n_prompt), n_out, finish)))
        return done

    def _finish_row(self, new_ids: list[int], sampling: SamplingConfig) -> tuple[str, int, str]:
        """(text, completion token count, finish reason) for one row's generated ids."""
        n = len(new_ids)
        hit_eos = False
        for i, t in enumerate(new_ids):
            if t in self.eos_ids:
                n, hit_eos = i + 1, True
                break
        else:
            pad = self.tokenizer.pad_token_id
            while n > 0 and new_ids[n - 1] == pad:  # rows that stopped early are padded to the batch end
                n -= 1
        text = self.tokenizer.decode(new_ids[:n], skip_special_tokens=True)
        cut = [text.index(s) for s in sampling.stop if s and s in text]
        if cut:
            return text[: min(cut)], n, "stop"
        if hit_eos:
            return text, n, "stop"
        return text, n, "length" if n >= sampling.max_tokens else "stop"


def _generation(row: tuple[GenRequest, int, int], result: tuple[str, int, int, str], latency_s: float,
                prefix_tokens: int | None = None) -> Generation:
    """One chain's Generation from its batch row (request, chain index, seed) and decoded result; the
    text is the request's prefix (assistant prefill) followed by the decoded continuation."""
    (req, c, s), (text, n_prompt, n_out, finish) = row, result
    return Generation(problem_id=req.problem_id, chain_index=c, text=join(req.prefix, text), prompt_tokens=n_prompt,
                      completion_tokens=n_out, finish_reason=finish, latency_s=latency_s, extra={"seed": s},
                      prefix=req.prefix, prefix_tokens=prefix_tokens)
