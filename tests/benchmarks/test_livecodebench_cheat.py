"""The cheat of issue 9, end to end through the task's grading path (parse + score, as ``vpo run``
does): a program that solves nothing reads its test input, finds the row in the data file on the host
and prints the stored expected output.

Without the sealed view (the unsafe mode, i.e. what grading was before issue 9) it passes every test,
which shows the attack is real; with the sealed view the data file does not exist for it and it fails
every test."""
from __future__ import annotations

import pytest

from vpo_harness.benchmarks.livecodebench import DEFAULT_FILE, LiveCodeBench
from vpo_harness.harness.core.paths import shared_data_dir
from vpo_harness.harness.core.sandbox import SandboxPool, detect_isolation
from vpo_harness.harness.core.sandbox.isolation import Isolation

DATA = shared_data_dir() / "livecodebench" / DEFAULT_FILE
CHEAT = f'''```python
import json, sys
data = sys.stdin.read()
for path in [{str(DATA)!r}]:
    try:
        lines = open(path).read().splitlines()
    except OSError:
        lines = []
    for line in lines:
        for t in json.loads(json.loads(line)["public_test_cases"]):
            if t["input"].strip() == data.strip():
                print(t["output"])
                raise SystemExit
print("no idea")
```'''

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def problems():
    task = LiveCodeBench()
    probs = [p for p in task.load("test") if p.data["mode"] == "stdin"][:6]
    assert len(probs) == 6
    return probs


def _score(task: LiveCodeBench, problems):
    out = []
    for p in problems:
        r, details = task.score(p, task.parse(CHEAT))
        out.append((r[0].tolist(), details[0]["isolation"]["sealed"]))
    return out


def test_cheat_passes_without_the_sealed_view(problems):
    task = LiveCodeBench(workers=2)
    task._pool = SandboxPool(2, isolation=Isolation(can_drop_privileges=False, notes=("test: unsealed",)),
                             unsafe=True)
    try:
        got = _score(task, problems)
    finally:
        task.close()
    assert all(not sealed for _, sealed in got)
    assert all(all(v == 1.0 for v in r) for r, _ in got), got  # the attack works when unsealed


def test_cheat_fails_in_the_sealed_sandbox(problems):
    assert detect_isolation().sealed
    task = LiveCodeBench(workers=2)
    try:
        got = _score(task, problems)
    finally:
        task.close()
    assert all(sealed for _, sealed in got)
    assert all(not any(r) for r, _ in got), got
