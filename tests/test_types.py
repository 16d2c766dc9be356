"""Type checking in CI: pyright over the five folders ([tool.pyright] in pyproject.toml) resolves every
project import, and its findings may only shrink against the committed baseline.

A finding is (file, rule, message) without its line, so an edit above it does not count as new. A
new finding fails with its file, line and message; one fixed since the baseline is reported, and the
baseline is written again (smaller) with ``python tests/test_types.py --write-baseline``.
"""
from __future__ import annotations

import collections
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BASELINE = ROOT / ".ci" / "pyright-baseline.json"

Finding = tuple[str, str, str]


def run_pyright() -> list[dict]:
    """pyright's diagnostics (errors and warnings) for the project as configured in pyproject.toml."""
    exe = shutil.which("pyright")
    if exe is None:
        raise RuntimeError("pyright is not installed: pip install -e '.[dev]' (it brings pyright[nodejs])")
    res = subprocess.run([exe, "--outputjson"], cwd=ROOT, capture_output=True, text=True, timeout=1800)
    try:
        report = json.loads(res.stdout)
    except json.JSONDecodeError:
        raise RuntimeError(f"pyright printed no JSON (exit {res.returncode}): {res.stderr[-2000:]}") from None
    return [d for d in report["generalDiagnostics"] if d.get("severity") in ("error", "warning")]


def key(d: dict) -> Finding:
    return (str(Path(d["file"]).resolve().relative_to(ROOT)), d.get("rule", ""), d["message"])


def write_baseline(diags: list[dict]) -> None:
    BASELINE.write_text(json.dumps(sorted(key(d) for d in diags), indent=1) + "\n", encoding="utf-8")


@pytest.mark.integration
def test_pyright_resolves_every_project_import_and_finds_nothing_new() -> None:
    diags = run_pyright()
    unresolved = [f"{key(d)[0]}:{d['range']['start']['line'] + 1}: {d['message']}" for d in diags
                  if d.get("rule") == "reportMissingImports" and "vpo_harness" in d["message"]]
    assert not unresolved, "project imports pyright cannot resolve:\n" + "\n".join(unresolved)
    baseline = collections.Counter(tuple(k) for k in json.loads(BASELINE.read_text(encoding="utf-8")))
    now = collections.Counter(key(d) for d in diags)
    new = now - baseline
    shown = [f"{key(d)[0]}:{d['range']['start']['line'] + 1}: {d.get('rule')}: {d['message']}" for d in diags
             if key(d) in new]
    assert not new, ("new pyright findings (fix them; the baseline may only shrink):\n" + "\n".join(shown))
    fixed = baseline - now
    if fixed:
        print(f"{sum(fixed.values())} baseline finding(s) fixed: python tests/test_types.py --write-baseline")


if __name__ == "__main__":
    if sys.argv[1:] != ["--write-baseline"]:
        sys.exit("usage: python tests/test_types.py --write-baseline")
    write_baseline(run_pyright())
    print(f"wrote {BASELINE}")
