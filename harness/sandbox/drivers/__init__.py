"""Drivers: code that runs *inside* the sandbox worker. Loaded as source text, not imported there."""
from __future__ import annotations

from pathlib import Path

_HERE = Path(__file__).resolve().parent


def driver_source(name: str) -> str:
    """Source text of ``drivers/<name>.py`` (sent to the child, which exec's it)."""
    return (_HERE / f"{name}.py").read_text()
