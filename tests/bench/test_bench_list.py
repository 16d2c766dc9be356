"""CONTRIBUTING.md's bench list names every file of bench/ (it named 13 of 22 scripts)."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_contributing_lists_every_bench_file() -> None:
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    section = text[text.index("## Benches"):text.index("## Mutation testing")]
    listed = set(re.findall(r"^- `([\w.]+)`(?: and `([\w.]+)`)?:", section, flags=re.M))
    names = {n for pair in listed for n in pair if n}
    files = {p.name for p in (ROOT / "bench").iterdir() if p.suffix in (".py", ".sh") and p.name != "__init__.py"}
    assert files - names == set(), f"bench files missing from CONTRIBUTING.md: {sorted(files - names)}"
    assert names - files == set(), f"CONTRIBUTING.md lists bench files that do not exist: {sorted(names - files)}"
