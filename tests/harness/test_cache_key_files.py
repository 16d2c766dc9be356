"""The generation cache key covers every file a checkpoint's generation reads (hashed whole), the hub
commit a revision resolves to, and the machine's resolved device class and dtype: editing any of
them in place makes the next run sample again. And the digest memo hashes a big file once."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from vpo_harness.harness.core import digests
from vpo_harness.harness.core.models import zoo
from vpo_harness.harness.eval.runner import RunConfig, run
from tests.harness.scripted import ScriptedBackend

N_CHAINS = 2 * 2
_OLD = time.time() - 3600  # an mtime old enough for the memo to remember the file


def _age(folder: Path) -> None:
    """Back-date every file's mtime (its ctime stays now: see :func:`_settled`)."""
    for f in folder.rglob("*"):
        if f.is_file():
            os.utime(f, (_OLD, _OLD))


def _settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Move the memo's clock an hour on, so files written now count as settled and are remembered
    (a file's ctime cannot be set back, and a test must not wait)."""
    monkeypatch.setattr(digests, "_now_ns", lambda: time.time_ns() + 3600 * 10**9)


@pytest.fixture
def ckpt(tmp_path: Path) -> Path:
    folder = tmp_path / "ckpt"
    (folder / "additional_chat_templates").mkdir(parents=True)
    files = {
        "config.json": json.dumps({"model_type": "llama", "torch_dtype": "float32"}),
        "generation_config.json": json.dumps({"eos_token_id": 2}),
        "tokenizer.json": json.dumps({"model": {"vocab": {"a": 0, "b": 1}}}),
        "tokenizer_config.json": json.dumps({"eos_token": "</s>"}),
        "special_tokens_map.json": json.dumps({"eos_token": "</s>"}),
        "chat_template.jinja": "{% for m in messages %}{{ m.content }}{% endfor %}",
        "additional_chat_templates/tool_use.jinja": "{{ messages }}",
        "model.safetensors": "weights-v1",
    }
    for name, text in files.items():
        (folder / name).write_text(text)
    _age(folder)
    return folder


def _run(tmp_path: Path, ckpt: Path, name: str, **kw: Any) -> ScriptedBackend:
    backend = ScriptedBackend()
    run(RunConfig.of(task="maze", model=f"hf:{ckpt}", limit=2, n=2, m=1, ks=(1,), progress=False, cache=True,
                     out=str(tmp_path / name), **kw), backend=backend)
    return backend


def _edit(path: Path) -> None:
    """An in-place edit of one byte, the file's size kept (what a stat memo could most easily miss)."""
    data = bytearray(path.read_bytes())
    i = len(data) // 2
    data[i] = ord("X") if data[i] != ord("X") else ord("Y")
    with open(path, "r+b") as fh:
        fh.write(bytes(data))


@pytest.mark.parametrize("name", ["chat_template.jinja", "generation_config.json", "tokenizer.json",
                                  "tokenizer_config.json", "special_tokens_map.json", "config.json",
                                  "additional_chat_templates/tool_use.jinja", "model.safetensors"])
def test_editing_a_generation_file_in_place_misses(tmp_path: Path, ckpt: Path, name: str) -> None:
    assert len(_run(tmp_path, ckpt, "a").calls) == N_CHAINS
    assert _run(tmp_path, ckpt, "b").calls == []  # unchanged: every chain from the cache
    _edit(ckpt / name)
    assert len(_run(tmp_path, ckpt, "c").calls) == N_CHAINS


def test_a_file_generation_does_not_read_keeps_the_key(tmp_path: Path, ckpt: Path) -> None:
    _run(tmp_path, ckpt, "a")
    (ckpt / "README.md").write_text("notes")
    (ckpt / "vpo_training.json").write_text("{}")
    assert _run(tmp_path, ckpt, "b").calls == []


def test_a_middle_tensor_of_a_big_file_changes_the_digest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A weights file over 64 MiB (sparse, so the test writes almost nothing) is hashed whole: one
    byte in its middle changes the fingerprint. Unchanged, the memo answers without reading it."""
    folder = tmp_path / "big"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    weights = folder / "model.safetensors"
    size = (64 << 20) + (5 << 20)
    with open(weights, "wb") as fh:
        fh.truncate(size)
    _age(folder)
    _settled(monkeypatch)
    hashed: list[str] = []
    real = digests._hash_file
    monkeypatch.setattr(digests, "_hash_file", lambda p: hashed.append(p.name) or real(p))
    before = zoo.fingerprint(str(folder))
    assert sorted(hashed) == ["config.json", "model.safetensors"]
    assert zoo.fingerprint(str(folder)) == before and len(hashed) == 2  # the memo: not read again
    with open(weights, "r+b") as fh:
        fh.seek(size // 2)
        fh.write(b"\x01")
    assert weights.stat().st_size == size
    after = zoo.fingerprint(str(folder))
    assert after != before and hashed[-1] == "model.safetensors"


def test_the_memo_never_remembers_a_file_still_being_written(tmp_path: Path, monkeypatch) -> None:
    """Two writes within one tick of the clock keep the mtime: a fresh file is hashed every time,
    and a back-dated mtime does not make it settled (its ctime is still fresh)."""
    f = tmp_path / "w.bin"
    f.write_bytes(b"a" * 100)
    memo = digests.DigestMemo(tmp_path / "memo")
    memo.digest(f)
    os.utime(f, (_OLD, _OLD))
    memo.digest(f)
    memo.save()
    assert not (tmp_path / "memo" / digests.MEMO_NAME).exists()
    _settled(monkeypatch)
    first = memo.digest(f)
    memo.save()
    again = digests.DigestMemo(tmp_path / "memo")
    assert again.digest(f) == first and str(f.resolve()) in json.loads((tmp_path / "memo" / digests.MEMO_NAME).read_text())


def _rewrite_keeping_mtime(path: Path, data: bytes) -> None:
    """Rewrite a file in place (same inode, same size) and put its old mtime back, as ``touch -d``,
    ``cp -p`` or ``rsync -t`` would."""
    st = path.stat()
    assert len(data) == st.st_size
    with open(path, "r+b") as fh:
        fh.write(data)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    while path.stat().st_ctime_ns == st.st_ctime_ns:  # within one tick of the kernel's coarse clock:
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # what any later rewrite would get
    after = path.stat()
    assert (after.st_mtime_ns, after.st_ino, after.st_size) == (st.st_mtime_ns, st.st_ino, st.st_size)


def test_a_rewrite_with_its_mtime_restored_misses_the_memo(tmp_path: Path, monkeypatch) -> None:
    _settled(monkeypatch)
    f = tmp_path / "model.safetensors"
    f.write_bytes(b"weights-v1")
    os.utime(f, (_OLD, _OLD))
    digests.DigestMemo(tmp_path / "memo").digest(f)
    first = digests.DigestMemo(tmp_path / "memo")
    first.digest(f)
    first.save()
    _rewrite_keeping_mtime(f, b"weights-v2")
    assert digests.DigestMemo(tmp_path / "memo").digest(f) == digests._hash_file(f)


def test_a_checkpoint_rewritten_with_its_mtime_restored_misses_the_cache(tmp_path: Path, ckpt: Path,
                                                                         monkeypatch) -> None:
    _settled(monkeypatch)
    assert len(_run(tmp_path, ckpt, "a").calls) == N_CHAINS
    assert _run(tmp_path, ckpt, "b").calls == []  # remembered by the memo, every chain from the cache
    _rewrite_keeping_mtime(ckpt / "model.safetensors", b"weights-v2")
    assert len(_run(tmp_path, ckpt, "c").calls) == N_CHAINS


def test_remote_code_is_part_of_the_key(tmp_path: Path, ckpt: Path) -> None:
    """With trust_remote_code the checkpoint's modeling_*.py runs: editing it misses; without
    trust_remote_code transformers never imports it, so it is not part of the key."""
    (ckpt / "modeling_tiny.py").write_text("SCALE = 1\n")
    (ckpt / "configuration_tiny.py").write_text("class C: pass\n")
    remote = {"model_args": {"trust_remote_code": True}}
    assert len(_run(tmp_path, ckpt, "a", **remote).calls) == N_CHAINS
    assert _run(tmp_path, ckpt, "b", **remote).calls == []
    plain = len(_run(tmp_path, ckpt, "p").calls)
    (ckpt / "modeling_tiny.py").write_text("SCALE = 2\n")
    assert len(_run(tmp_path, ckpt, "c", **remote).calls) == N_CHAINS
    assert plain == N_CHAINS and _run(tmp_path, ckpt, "q").calls == []
    (ckpt / "configuration_tiny.py").write_text("class C: x = 1\n")
    assert len(_run(tmp_path, ckpt, "d", **remote).calls) == N_CHAINS


def test_an_unreadable_memo_is_an_empty_one(tmp_path: Path) -> None:
    (tmp_path / digests.MEMO_NAME).write_text("{not json")
    f = tmp_path / "x"
    f.write_bytes(b"x")
    assert digests.DigestMemo(tmp_path).digest(f) == digests._hash_file(f)


# ---- hub ids --------------------------------------------------------------------------------------

COMMIT_A, COMMIT_B = "a" * 40, "b" * 40


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A hub cache in the layout huggingface_hub writes: refs/main names a snapshot folder."""
    from huggingface_hub import constants

    root = tmp_path / "hub"
    repo = root / "models--org--tiny"
    for commit in (COMMIT_A, COMMIT_B):
        (repo / "snapshots" / commit).mkdir(parents=True)
        (repo / "snapshots" / commit / "config.json").write_text("{}")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(COMMIT_A)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(root))
    return repo


def test_a_hub_id_is_its_local_commit(hub: Path) -> None:
    assert zoo.fingerprint("org/tiny") == f"hub:{COMMIT_A}"
    assert zoo.fingerprint("org/tiny", COMMIT_B) == f"hub:{COMMIT_B}"
    assert zoo.fingerprint("org/tiny@" + COMMIT_B) == f"hub:{COMMIT_B}"
    (hub / "refs" / "main").write_text(COMMIT_B)
    assert zoo.fingerprint("org/tiny") == f"hub:{COMMIT_B}"
    assert zoo.fingerprint("org/other") is None and zoo.fingerprint("org/tiny", "c" * 40) is None


def _run_hub(tmp_path: Path, name: str) -> ScriptedBackend:
    """A cached run of the hub id ``org/tiny`` into ``tmp_path/name``; the backend says what it sampled."""
    backend = ScriptedBackend()
    run(RunConfig.of(task="maze", model="hf:org/tiny", limit=2, n=2, m=1, ks=(1,), progress=False, cache=True,
                     out=str(tmp_path / name)), backend=backend)
    return backend


def test_a_moved_hub_ref_misses(tmp_path: Path, hub: Path) -> None:
    def once(name: str) -> ScriptedBackend:
        return _run_hub(tmp_path, name)

    assert len(once("a").calls) == N_CHAINS and once("b").calls == []
    (hub / "refs" / "main").write_text(COMMIT_B)
    assert len(once("c").calls) == N_CHAINS


def test_a_file_edited_inside_a_hub_snapshot_misses(tmp_path: Path, hub: Path) -> None:
    """The commit stays, the snapshot's bytes change: the snapshot's files are part of the key, as a
    local checkpoint's are (here a blob behind the snapshot's link, as huggingface_hub lays it out)."""
    blobs = hub / "blobs"
    blobs.mkdir()
    (blobs / "tok").write_text('{"model": {"vocab": {"a": 0}}}')
    (hub / "snapshots" / COMMIT_A / "tokenizer.json").symlink_to(blobs / "tok")

    def once(name: str) -> ScriptedBackend:
        return _run_hub(tmp_path, name)

    assert len(once("a").calls) == N_CHAINS and once("b").calls == []
    (blobs / "tok").write_text('{"model": {"vocab": {"b": 0}}}')
    assert len(once("c").calls) == N_CHAINS
    (hub / "snapshots" / COMMIT_A / "generation_config.json").write_text('{"temperature": 0.1}')
    assert len(once("d").calls) == N_CHAINS


def test_a_hub_fingerprint_names_its_commit(hub: Path) -> None:
    from vpo_harness.harness.core.provenance import hub_commit, model_fingerprint

    got = model_fingerprint("hf:org/tiny", {})
    assert got is not None and got.startswith(f"hub:{COMMIT_A}/") and hub_commit(got) == COMMIT_A
    assert hub_commit(model_fingerprint("hf:org/tiny", {"revision": COMMIT_B})) == COMMIT_B
    assert model_fingerprint("hf:org/other", {}) is None and hub_commit("0123abcd") is None


def test_a_hub_id_without_a_local_snapshot_is_not_cached_by_default(hub: Path) -> None:
    from vpo_harness.harness.core.gencache import cache_decision

    use, why = cache_decision(None, "hf:org/other", {}, weights=zoo.fingerprint("org/other"))
    assert use is False and "hub-cache snapshot" in why
    assert cache_decision(None, "hf:org/tiny", {}, weights=zoo.fingerprint("org/tiny"))[0] is True


# ---- the machine ---------------------------------------------------------------------------------


def test_a_resolved_dtype_or_device_change_misses(tmp_path: Path, ckpt: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``auto`` is bfloat16 on CUDA and float32 on a CPU: the same command on another machine class
    must not reuse the chains (the identity, which says ``auto``, is the same)."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert len(_run(tmp_path, ckpt, "a").calls) == N_CHAINS
    assert json.loads((tmp_path / "a" / "config.json").read_text())["cache"]["runtime"]["dtype"] == "float32"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert len(_run(tmp_path, ckpt, "b").calls) == N_CHAINS
    assert json.loads((tmp_path / "b" / "config.json").read_text())["cache"]["runtime"] | {"library": None} == {
        "device": "cuda", "dtype": "bfloat16", "library": None}
    assert _run(tmp_path, ckpt, "c").calls == []  # the same machine class again: every chain found


def test_a_backend_that_loaded_another_commit_stores_nothing(tmp_path: Path, hub: Path, capsys) -> None:
    """The hub moved while the model downloaded: the chains are of commit B, the key names A."""
    class Moved(ScriptedBackend):
        loaded_revision = COMMIT_B

    work = dict(task="maze", model="hf:org/tiny", limit=2, n=2, m=1, ks=(1,), progress=False, cache=True)
    run(RunConfig.of(**work, out=str(tmp_path / "a")), backend=Moved())
    warned = [ln for ln in capsys.readouterr().err.splitlines() if "loaded hub commit" in ln]
    assert len(warned) == 1 and COMMIT_B in warned[0] and COMMIT_A in warned[0]
    again = ScriptedBackend()
    run(RunConfig.of(**work, out=str(tmp_path / "b")), backend=again)
    assert len(again.calls) == N_CHAINS  # nothing was stored under commit A's key
    same = ScriptedBackend()
    run(RunConfig.of(**work, out=str(tmp_path / "c")), backend=same)
    assert same.calls == []  # a backend without a moved commit stores as usual
