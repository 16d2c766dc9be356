"""vpo-harness: evaluation and test-time search for diversity-trained models."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what the lazy names below are, for type checkers and language servers
    from vpo_harness.harness.core.results import load_run
    from vpo_harness.harness.eval.runner import RunConfig, run

__all__ = ["load_run", "run", "RunConfig"]


def __getattr__(name: str) -> Any:  # lazy: `import harness` stays cheap for the CLI
    if name == "load_run":
        from vpo_harness.harness.core.results import load_run

        return load_run
    if name in ("run", "RunConfig"):
        from vpo_harness.harness.eval import runner

        return getattr(runner, name)
    raise AttributeError(name)
