"""A scripted Backend for runner/metric/search tests: no model, fully controlled outputs.

- ``responder(request, chain_index, seed) -> str`` decides each text (default: a deterministic
  string built from problem id, chain index and seed, so seeds visibly matter); for a prefilled
  request (``request.prefix``) it gives the continuation and the text is prefix + continuation;
- ``errors``: (problem_id, chain_index) pairs that come back as error Generations;
- ``crash_after=N``: raise ``SimulatedCrash`` after N yielded chains (crash-resume tests);
- ``shuffle_seed``: yield in a shuffled (but reproducible) completion order, as real servers do.

Every ``generate`` call is recorded in ``calls`` so tests can assert what was (re)requested.
``register()`` makes it loadable as ``scripted:NAME`` through ``vpo_harness.harness.core.models.load_backend``.
"""
from __future__ import annotations

import random
from typing import Any, Callable, Iterable, Iterator, Sequence

from vpo_harness.harness.core.models.base import Backend, GenRequest, Generation, SamplingConfig

Responder = Callable[[GenRequest, int, int], str]


class SimulatedCrash(RuntimeError):
    """Raised mid-stream to imitate a killed process."""


def default_responder(req: GenRequest, chain_index: int, seed: int) -> str:
    return f"{req.problem_id}/chain{chain_index}/seed{seed}"


class ScriptedBackend(Backend):
    name = "scripted"
    supports_prefill = True  # a prefilled request's text is prefix + the responder's continuation

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        errors: Iterable[tuple[str, int]] = (),
        crash_after: int | None = None,
        shuffle_seed: int | None = None,
        model: str = "scripted",
    ) -> None:
        self.responder = responder or default_responder
        self.errors = set(errors)
        self.crash_after = crash_after
        self.shuffle_seed = shuffle_seed
        self.model = model
        self.calls: list[tuple[list[GenRequest], SamplingConfig]] = []
        self.yielded = 0
        self.closed = False

    def describe(self) -> dict[str, Any]:
        return {"backend": self.name, "model": self.model}

    def close(self) -> None:
        self.closed = True

    def generate(self, requests: Sequence[GenRequest], sampling: SamplingConfig) -> Iterator[Generation]:
        requests = list(requests)
        self.calls.append((requests, sampling))
        units = [(r, c, s) for r in requests for c, s in zip(r.chain_indices, r.seeds)]
        if self.shuffle_seed is not None:
            random.Random(self.shuffle_seed).shuffle(units)
        for req, c, s in units:
            if self.crash_after is not None and self.yielded >= self.crash_after:
                raise SimulatedCrash(f"simulated crash after {self.yielded} chains")
            self.yielded += 1
            if (req.problem_id, c) in self.errors:
                yield Generation(req.problem_id, c, "", error="scripted failure", attempts=3, extra={"seed": s})
                continue
            cont = self.responder(req, c, s)
            yield Generation(req.problem_id, c, req.prefix + cont,
                             prompt_tokens=sum(len(m["content"].split()) for m in req.messages),
                             completion_tokens=len(cont.split()), finish_reason="stop", latency_s=0.0,
                             extra={"seed": s}, prefix=req.prefix,
                             prefix_tokens=len(req.prefix.split()) if req.prefix else None)


def register() -> None:
    """Make ``scripted:NAME`` loadable via ``load_backend`` (model_args go to the constructor)."""
    from vpo_harness.harness.core.models import register_backend

    register_backend("scripted", lambda model, base_url, args: ScriptedBackend(model=model, **args))
