"""The openai backend's settings: one dataclass that ``--model-args`` (and an evolve config's
``llm:`` block) parse into, checked once, where the backend is built.

Why a dataclass of its own: the backend used to take some twenty keyword arguments and check them
in its constructor, and two callers (the backend factory and `vpo evolve`) checked the names again
against the constructor's signature. Now the field list here is the one list of accepted names
(:meth:`OpenAISettings.names`), :meth:`OpenAISettings.from_args` is the one parser, and the backend,
its retry policy (:mod:`~vpo_harness.harness.core.models.openai_retry`) and its connections
(:mod:`~vpo_harness.harness.core.models.openai_connections`) each read the fields they need.
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import Any, Mapping

from vpo_harness.harness.core.models.base import check_args
from vpo_harness.harness.core.models.transport import check_header
from vpo_harness.harness.core.printable import printable

#: settings a run's record leaves out: the key (a secret) and the backoff (how long to wait, never what
#: a chain says)
_UNRECORDED = frozenset({"api_key", "backoff_base", "backoff_max"})

#: where the ``headers`` setting comes from, named in its errors
HEADERS_SOURCE = "--model-args headers"


def parse_headers(value: dict[str, str] | str | None) -> dict[str, str]:
    """``headers=``: a dict from Python, or ``Name:value;Name2:value2`` from ``--model-args`` (whose
    entries are split at commas, so the headers are split at semicolons)."""
    if value is None or value == "":
        return {}
    if isinstance(value, dict):
        return {str(k).strip(): str(v) for k, v in value.items()}
    if not isinstance(value, str):
        raise ValueError(f"--model-args headers: expected Name:value;Name2:value2, got {type(value).__name__}")
    out: dict[str, str] = {}
    for part in value.split(";"):
        if not part.strip():
            continue
        name, sep, text = part.partition(":")
        if not sep or not name.strip():
            raise ValueError(f"--model-args headers: bad entry {printable(part)!r}: expected Name:value "
                             "(several separated by ';')")
        out[name.strip()] = text.strip()
    return out


@dataclass(frozen=True)
class OpenAISettings:
    """How the backend talks to its server(s); every field is a ``--model-args`` name.

    ``deadline`` None means "the timeout"; ``headers`` may be given as ``Name:value;...`` text and is
    held as a dict; ``api_key`` None means ``OPENAI_API_KEY`` (else ``EMPTY``), read by
    :meth:`resolved_api_key`. docs/usage.md describes each setting."""

    mode: str = "chat"
    concurrency: int = 32
    max_retries: int = 6
    timeout: float = 600.0
    deadline: float | None = None
    use_n: bool | str = "auto"
    backoff_base: float = 1.0
    backoff_max: float = 60.0
    api_key: str | None = field(default=None, repr=False)
    tokenizer: str | None = None
    extra_body: dict[str, Any] = field(default_factory=dict)
    send_seed: bool = True
    eject_after: int = 3
    cooldown_s: float = 10.0
    connect_retries: int = 1
    connect_backoff: float = 0.25
    give_up_after: float = 300.0
    headers: dict[str, str] | str | None = None
    keepalive: bool = True

    def __post_init__(self) -> None:
        if self.mode not in ("chat", "completions"):
            raise ValueError(f"mode must be 'chat' or 'completions', got {self.mode!r}")
        if self.use_n not in ("auto", True, False):
            raise ValueError(f"use_n must be 'auto', true or false, got {self.use_n!r}")
        if self.concurrency < 1:
            raise ValueError("concurrency must be >= 1")
        if self.max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        if self.connect_retries < 0 or self.connect_backoff < 0:
            raise ValueError("connect_retries and connect_backoff must be >= 0")
        # the client's timeout bounds each step of a request (connect, head, body) on its own, so an
        # attempt could take a few timeouts in all: every attempt also gets a wall-clock deadline
        # (default: the timeout) and is retried past it
        deadline = float(self.deadline) if self.deadline is not None else float(self.timeout)
        if deadline <= 0:
            raise ValueError(f"deadline must be > 0 seconds, got {self.deadline}")
        if self.give_up_after <= 0:
            raise ValueError(f"give_up_after must be > 0 seconds, got {self.give_up_after}")
        if self.keepalive not in (True, False):
            raise ValueError(f"keepalive must be true or false, got {self.keepalive!r}")
        headers = parse_headers(self.headers)
        for name, value in headers.items():
            check_header(name, value, HEADERS_SOURCE)
        set_ = object.__setattr__  # frozen: the normal forms are written once, here
        set_(self, "concurrency", int(self.concurrency))
        set_(self, "max_retries", int(self.max_retries))
        set_(self, "timeout", float(self.timeout))
        set_(self, "deadline", deadline)
        set_(self, "backoff_base", float(self.backoff_base))
        set_(self, "backoff_max", float(self.backoff_max))
        set_(self, "extra_body", dict(self.extra_body or {}))
        set_(self, "send_seed", bool(self.send_seed))
        set_(self, "eject_after", int(self.eject_after))
        set_(self, "cooldown_s", float(self.cooldown_s))
        set_(self, "connect_retries", int(self.connect_retries))
        set_(self, "connect_backoff", float(self.connect_backoff))
        set_(self, "give_up_after", float(self.give_up_after))
        set_(self, "headers", headers)
        # refused here, before any request, naming where the value came from (never echoing it)
        check_header("Authorization", self.resolved_api_key(), self.api_key_source())

    @classmethod
    def names(cls) -> list[str]:
        """The ``--model-args`` the openai backend accepts (``base_url`` aside: the factory takes it)."""
        return [f.name for f in dataclasses.fields(cls)]

    @classmethod
    def from_args(cls, args: Mapping[str, Any]) -> "OpenAISettings":
        """The one parser: parsed ``--model-args`` (a dict) -> settings; an unknown name is refused in
        one line listing the known ones, a bad value in one line naming the setting."""
        check_args("openai", dict(args), cls.names())
        return cls(**args)

    def resolved_api_key(self) -> str:
        """The key sent: the setting, else ``OPENAI_API_KEY``, else ``EMPTY`` (a local server)."""
        return self.api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY"

    def api_key_source(self) -> str:
        """Where :meth:`resolved_api_key` came from, for an error that must not echo the key."""
        if self.api_key:
            return "--model-args api_key (or an evolve --config's llm.api_key)"
        return "the OPENAI_API_KEY environment variable" if os.environ.get("OPENAI_API_KEY") else "api_key"

    @property
    def attempt_s(self) -> float:
        """Each attempt's wall-clock deadline in seconds (``deadline``, which defaults to the timeout)."""
        return float(self.deadline) if self.deadline is not None else self.timeout

    @property
    def header_map(self) -> dict[str, str]:
        """``headers`` in its parsed form (typed: the field also admits the text form before parsing)."""
        return self.headers if isinstance(self.headers, dict) else {}

    def describe(self) -> dict[str, Any]:
        """The settings as a run records them: no key, and the header names only (a header may carry a
        secret)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in _UNRECORDED}
        out["headers"] = sorted(self.header_map)
        return out
