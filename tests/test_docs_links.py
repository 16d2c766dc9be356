"""Every relative markdown link in the project's docs points at a file that exists and, where it names
an anchor (`](docs/usage.md#tasks-vpo-ls)`), at a heading that file really has.

Why: moving folders or renaming a heading silently breaks `#anchor` links (GitHub then just opens the
top of the page), and nothing else notices. Anchors are computed the way GitHub renders them: the
heading text lower-cased, inline markup dropped, every character other than a letter, digit, space,
`-` or `_` removed, spaces turned into `-`, and a repeated heading suffixed `-1`, `-2`, ...
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: the docs a reader of the repository follows links through
DOCS = sorted([ROOT / "README.md", ROOT / "CONTRIBUTING.md", *(ROOT / "docs").glob("*.md"),
               *(ROOT / "checkpoints").glob("*/README.md")])

_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_LINK = re.compile(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def _prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) outside fenced code blocks: a `# comment` in a bash block is no heading."""
    out, fenced = [], False
    for number, line in enumerate(text.splitlines(), 1):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            out.append((number, line))
    return out


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text (without the duplicate suffix)."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)   # links and images: keep their text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").replace("*", "")
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every anchor a markdown file defines: its headings' slugs, duplicates numbered as GitHub does."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    for _, line in _prose_lines(path.read_text(encoding="utf-8")):
        m = _HEADING.match(line)
        if not m:
            continue
        base = slug(m.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def broken_links(path: Path) -> list[str]:
    """'file:line: target (why)' for each relative link of `path` that leads nowhere."""
    problems = []
    for number, line in _prose_lines(path.read_text(encoding="utf-8")):
        for target in _LINK.findall(re.sub(r"`[^`]*`", "", line)):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):      # http:, https:, mailto:
                continue
            file_part, _, anchor = target.partition("#")
            dest = (path.parent / file_part).resolve() if file_part else path
            where = f"{path.relative_to(ROOT)}:{number}: {target}"
            if not dest.exists():
                problems.append(f"{where} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                problems.append(f"{where} (no heading with anchor #{anchor} in {dest.relative_to(ROOT)})")
    return problems


def test_slug_follows_github() -> None:
    assert slug("Metrics (`harness/core/metrics.py`)") == "metrics-harnesscoremetricspy"
    assert slug("Tasks (`vpo ls`)") == "tasks-vpo-ls"
    assert slug("Benches (`bench/`)") == "benches-bench"
    assert slug("Layers, and where each concept lives") == "layers-and-where-each-concept-lives"
    assert slug("[vLLM](https://x) on CPU") == "vllm-on-cpu"


def test_duplicate_headings_are_numbered(tmp_path: Path) -> None:
    doc = tmp_path / "a.md"
    doc.write_text("# Notes\n\n```bash\n# Notes\n```\n\n## Notes\n", encoding="utf-8")
    assert anchors(doc) == {"notes", "notes-1"}


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_links_lead_somewhere(doc: Path) -> None:
    problems = broken_links(doc)
    assert not problems, "broken links:\n" + "\n".join(problems)
