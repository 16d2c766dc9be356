"""Notes and warnings from library code go through :mod:`logging`, under the ``vpo_harness`` logger.

Why: a ``print(..., file=sys.stderr)`` deep in the library reaches the terminal whatever the caller
wants; a logger lets a caller silence it (``logging.getLogger("vpo_harness").setLevel(logging.ERROR)``)
or capture it (a handler of its own). Library modules log with ``logging.getLogger(__name__)``:
``warning`` for what went wrong and was worked around, ``info`` for what the run is doing.

The caller decides what reaches the terminal. The `vpo` command (and `vpo serve`'s own process) calls
:func:`to_terminal`: every record at ``info`` and above is written to stderr as its bare message, so the
lines read exactly as they did when they were printed. A program that configures nothing sees the
warnings (Python's last-resort handler prints them, bare) and not the notes.
"""
from __future__ import annotations

import logging
import sys

ROOT = "vpo_harness"


class _Stderr(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is at the time of the record (a test's capture, a redirect)."""

    def __init__(self) -> None:
        super().__init__()

    @property  # type: ignore[override]
    def stream(self):  # noqa: ANN201 - a text stream
        return sys.stderr

    @stream.setter
    def stream(self, value: object) -> None:  # StreamHandler.__init__ assigns it; stderr is read live
        pass


def to_terminal(level: int = logging.INFO) -> logging.Handler:
    """Send the project's records at ``level`` and above to stderr as bare messages (once per process)."""
    logger = logging.getLogger(ROOT)
    for h in logger.handlers:
        if isinstance(h, _Stderr):
            return h
    handler = _Stderr()
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False  # a root handler configured elsewhere would print each line twice
    return handler
