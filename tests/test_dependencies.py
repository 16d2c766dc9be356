"""The runtime install brings what the first documented model needs (hf:smollm2-135m is converted
from GGUF: transformers needs gguf and accelerate for that, and refused with "accelerate is required
when loading a GGUF file" on an install without the dev extra)."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_zoo_needs_are_runtime_dependencies() -> None:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {re.split(r"[<>=!~ \[]", d, maxsplit=1)[0].lower() for d in deps}
    assert {"accelerate", "gguf", "transformers", "torch", "tokenizers", "tqdm"} <= names
