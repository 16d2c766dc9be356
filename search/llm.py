"""The mutation operator's LLM calls: one OpenAI-compatible chat completion per iteration.

The same ``openai.AsyncOpenAI`` client OpenEvolve uses (``openevolve/llm/openai.py``), with the
request ``seed`` derived from the run seed, the problem and the iteration, so a seed-honouring server
(``vpo serve``, vLLM) gives the same child for the same iteration on a re-run.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any


class LLMUnreachable(RuntimeError):
    """The server did not answer: one clear error instead of a hang or a retry storm."""


class LLMError(RuntimeError):
    """The server answered with an error the client's retries could not get past."""


@dataclass
class Completion:
    text: str
    prompt_tokens: int | None
    completion_tokens: int | None
    finish_reason: str | None
    latency_s: float


class ChatLLM:
    def __init__(self, base_url: str, model: str, *, api_key: str = "EMPTY", timeout_s: float = 120.0,
                 retries: int = 2, temperature: float = 0.7, top_p: float = 1.0, max_tokens: int = 1024,
                 stop: tuple[str, ...] = ()):
        import openai

        self.base_url, self.model = base_url.rstrip("/"), model
        self.temperature, self.top_p, self.max_tokens, self.stop = temperature, top_p, max_tokens, stop
        self.client = openai.AsyncOpenAI(api_key=api_key, base_url=self.base_url, timeout=timeout_s,
                                         max_retries=retries)

    def check(self, timeout_s: float = 10.0) -> list[str]:
        """Model ids the server lists; raises LLMUnreachable naming the URL when it cannot."""
        import openai

        probe = openai.OpenAI(api_key=self.client.api_key, base_url=self.base_url, timeout=timeout_s, max_retries=0)
        try:
            return [m.id for m in probe.models.list().data]
        except Exception as exc:  # noqa: BLE001 - connection refused, DNS, timeout, 404, garbage
            raise LLMUnreachable(f"cannot reach the LLM server at {self.base_url} "
                                 f"({type(exc).__name__}: {str(exc)[:200]})") from None
        finally:
            probe.close()

    async def complete(self, messages: list[dict[str, str]], seed: int) -> Completion:
        import openai

        t0 = time.perf_counter()
        kw: dict[str, Any] = dict(model=self.model, messages=messages, n=1, seed=int(seed),
                                  temperature=self.temperature, top_p=self.top_p, max_tokens=self.max_tokens)
        if self.stop:
            kw["stop"] = list(self.stop)
        try:
            resp = await self.client.chat.completions.create(**kw)
        except (openai.APIConnectionError, openai.APITimeoutError) as exc:
            raise LLMUnreachable(f"LLM server at {self.base_url} stopped answering ({type(exc).__name__})") from None
        except openai.APIError as exc:  # 4xx/5xx after the client's retries: stop with one clear line
            raise LLMError(f"LLM server at {self.base_url} refused a request after retries "
                           f"({type(exc).__name__}: {str(exc)[:200]})") from None
        choice = resp.choices[0] if resp.choices else None
        text = (choice.message.content if choice is not None and choice.message is not None else None) or ""
        usage = resp.usage
        return Completion(text=text, prompt_tokens=getattr(usage, "prompt_tokens", None),
                          completion_tokens=getattr(usage, "completion_tokens", None),
                          finish_reason=getattr(choice, "finish_reason", None),
                          latency_s=time.perf_counter() - t0)

    async def aclose(self) -> None:
        await self.client.close()
