"""Several OpenAI-compatible endpoints: spreading, ejection of a failing one, health checks, and a
run over two loopback servers where one goes down half-way."""
from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from vpo_harness.harness.core.models import load_backend
from vpo_harness.harness.core.models.endpoints import EndpointPool, split_urls
from vpo_harness.harness.eval.runner import RunConfig, run
from bench.loopback_openai import FakeOpenAIServer, FakeServerConfig


class FakeClient:
    def __init__(self, url: str) -> None:
        self.url, self.healthy, self.closed = url, True, False

    async def get(self, path: str) -> dict:
        if not self.healthy:
            raise ConnectionError("down")
        return {"data": []}

    async def aclose(self) -> None:
        self.closed = True


def api_error() -> Exception:
    from vpo_harness.harness.core.models.transport import RemoteProtocolError

    return RemoteProtocolError("the server closed the connection mid-reply", method="POST", url="http://x")


def status_error(code: int) -> Exception:
    from vpo_harness.harness.core.models.transport import StatusError

    return StatusError(code, {}, "boom", method="POST", url="http://x")


def test_split_urls() -> None:
    assert split_urls("http://a/v1, http://b/v1/ ,") == ["http://a/v1", "http://b/v1"]
    assert split_urls(None) == [] and split_urls(["http://a"]) == ["http://a"]
    with pytest.raises(ValueError, match="more than once"):
        split_urls("http://a,http://a/")


def test_pool_spreads_ejects_and_readmits() -> None:
    async def scenario() -> None:
        pool = EndpointPool(["a", "b", "c"], FakeClient, eject_after=2, cooldown_s=0.05)
        await pool.start()
        a, b, c = pool.endpoints
        picks = [pool.pick().url for _ in range(6)]
        assert sorted(picks) == ["a", "a", "b", "b", "c", "c"]  # idle pool: in turn
        a.inflight = 5
        assert {pool.pick().url for _ in range(4)} == {"b", "c"}  # least in flight
        a.inflight = 0
        pool.failed(b, status_error(404))  # the request's fault: never counts
        pool.failed(b, status_error(429))
        assert b.consecutive_failures == 0
        pool.failed(b, api_error())
        assert b.admitted and "b" in {pool.pick().url for _ in range(3)}  # one failure is not an outage
        pool.succeeded(b)
        pool.failed(b, api_error())  # the count is of *consecutive* failures
        assert b.admitted and b.consecutive_failures == 1
        b.client.healthy = False
        pool.failed(b, status_error(502))
        assert not b.admitted and b.stats["ejections"] == 1
        await asyncio.sleep(0.08)
        pool.pick()  # cooldown over: a background health check runs, and fails
        await asyncio.sleep(0.02)
        assert not b.admitted
        b.client.healthy = True
        await asyncio.sleep(0.08)
        pool.pick()
        await asyncio.sleep(0.02)
        assert b.admitted and b.stats["readmissions"] == 1 and b.consecutive_failures == 0
        await pool.aclose()
        assert all(ep.client.closed for ep in pool.endpoints)

    asyncio.run(scenario())


def test_pool_start_ejects_dead_and_refuses_all_dead() -> None:
    class DeadB(FakeClient):
        def __init__(self, url: str) -> None:
            super().__init__(url)
            self.healthy = url != "b"

    async def scenario() -> None:
        pool = EndpointPool(["a", "b"], DeadB, cooldown_s=60)
        await pool.start()
        assert [ep.admitted for ep in pool.endpoints] == [True, False]
        assert {pool.pick().url for _ in range(5)} == {"a"}
        dead = EndpointPool(["x", "y"], lambda u: DeadB("b"))
        with pytest.raises(ValueError, match="none of the 2 endpoints"):
            await dead.start()
        single = EndpointPool(["b"], DeadB, eject_after=1)  # one URL: nothing to fail over to
        await single.start()
        single.failed(single.endpoints[0], api_error())
        assert single.endpoints[0].admitted and single.pick().url == "b"

    asyncio.run(scenario())


def rows(folder: Path) -> list[dict]:
    return [json.loads(l) for l in (folder / "samples.jsonl").read_text().splitlines()]


def test_run_over_two_servers_one_going_down_half_way(tmp_path: Path) -> None:
    good_cfg = FakeServerConfig(delay_s=0.01)
    bad_cfg = FakeServerConfig(delay_s=0.01, fail_after=15)
    with FakeOpenAIServer(good_cfg) as good, FakeOpenAIServer(bad_cfg) as bad:
        backend = load_backend("openai:fake", base_url=f"{good.base_url},{bad.base_url}",
                               model_args={"use_n": False, "concurrency": 4, "max_retries": 4,
                                           "backoff_base": 0.01, "backoff_max": 0.05, "cooldown_s": 30})
        try:
            cfg = RunConfig.of(task="maze", model="openai:fake", base_url=f"{good.base_url},{bad.base_url}",
                            limit=10, n=6, m=1, ks=(1, 6), max_tokens=16, out=str(tmp_path / "run"), progress=False)
            folder = run(cfg, backend=backend)
            stats = backend.endpoint_stats()
        finally:
            backend.close()
        bad_log, good_log = bad.outcomes(), good.outcomes()
    got = rows(folder)
    keys = [(r["problem_id"], r["chain_index"]) for r in got]
    assert len(keys) == 60 and len(set(keys)) == 60, "every chain recorded exactly once"
    assert not [r for r in got if r["error"]], "the healthy endpoint must absorb the failed requests"
    served = {r["extra"]["endpoint"] for r in got}
    assert served == {good.base_url.rstrip("/"), bad.base_url.rstrip("/")}  # both served before the failure
    assert sum(r["extra"]["endpoint"] == bad.base_url for r in got) == 15
    b = stats[bad.base_url]
    assert b["ejections"] == 1 and not b["admitted"] and b["failures"] == bad_log["down"] >= 3
    # the failed requests were re-sent to the healthy server, which answered all the rest
    assert stats[good.base_url]["admitted"] and stats[good.base_url]["failures"] == 0 and good_log == {"ok": 45}


def test_cli_accepts_several_base_urls(tmp_path: Path) -> None:
    from vpo_harness.harness.app.cli import main

    with FakeOpenAIServer() as a, FakeOpenAIServer() as b:
        rc = main(["run", "--task", "maze", "--model", "openai:fake", "--base-url", f"{a.base_url},{b.base_url}",
                   "--limit", "3", "-n", "4", "--k", "1,4", "--max-tokens", "8", "--no-progress",
                   "--model-args", "use_n=false", "--out", str(tmp_path / "r")])
        assert rc == 0 and a.outcomes().get("ok") and b.outcomes().get("ok")
    assert len(rows(tmp_path / "r")) == 12
