"""LiveCodeBench code generation (Jain et al., ICLR 2025) as a VPO task.

Reward vector: one component per kept test, 1 if the program passes it. The number of tests differs
between problems, so the vector of a problem has exactly that problem's length (``n_tests``, at most
16) rather than being padded: ``scalar`` (mean) is then the fraction of *its* tests passed and
``passed`` (all components 1) is "passes every test", with no padding convention to get wrong.
``component_names`` is a generic ("test_1".."test_16") tuple for code that needs a static label
set; :meth:`LiveCodeBench.components_for` gives the names that match one problem's vector.

Grading follows LiveCodeBench's ``testing_util`` semantics (benchmarks/livecodebench_driver.py runs
inside the sandbox, benchmarks/livecodebench_judge.py judges in the parent) and runs every candidate
in the sealed sandbox (harness/core/sandbox), a pool of workers in parallel.
"""
from __future__ import annotations

import ast
import base64
import datetime as _dt
import json
import pickle
import re
import threading
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, ClassVar, Sequence

import numpy as np

from vpo_harness.benchmarks.base import Benchmark, DataError, Messages, Option, Problem
from vpo_harness.benchmarks.livecodebench_judge import TIMEOUT_S, WALL_FACTOR  # one source: the judge
from vpo_harness.benchmarks.rowfiles import Row, duplicate_id, read_rows
from vpo_harness.harness.core.paths import shared_data_dir

HUB_ID = "livecodebench/code_generation_lite"
#: raw files of the hub repo, release_v1 .. release_v6 additions
HUB_FILES = ("test.jsonl", "test2.jsonl", "test3.jsonl", "test4.jsonl", "test5.jsonl", "test6.jsonl")
DEFAULT_FILE = "code_generation_lite.v5v6.public.jsonl"
#: VPO's LCB test window ([start, end) on contest_date); everything earlier is the train split
TEST_WINDOW = (_dt.datetime(2025, 2, 1), _dt.datetime(2025, 5, 1))
MAX_TESTS = 16
MAX_TEST_BYTES = 8192

SYSTEM_PROMPT = ("You are an expert Python programmer. You solve competitive-programming problems with "
                 "correct, efficient Python 3 code that passes every hidden test.")
#: ``--prompt-style paper``: the VPO authors' prompt (``build_prompt`` in ``vpo_tasks/livecodebench.py``
#: at commit 767db79), one user turn and no system message, as their evaluation renders it. The texts
#: must stay character for character theirs (tests/benchmarks/test_lcb_paper_prompt.py compares the
#: rendered prompts with their function's output); keyed by (test type, one answer or several)
PAPER_TAILS: dict[tuple[str, bool], str] = {
    ("functional", False): ("\n\nYour solution should be a Python function with this signature:\n"
                            "```python\n{signature}\n```\n\nWrap your solution in a ```python``` code block."),
    ("stdin", False): ("\n\nWrite a complete Python program that reads input from stdin and writes output to "
                       "stdout. Wrap your solution in a ```python``` code block."),
    ("functional", True): ("\n\nYour solutions should be Python functions with this signature:\n"
                           "```python\n{signature}\n```\n\nWrite {m} different solutions that solve this problem. "
                           "Each solution should use a different approach. Wrap each solution in a ```python``` "
                           "code block and separate them with '---'."),
    ("stdin", True): ("\n\nEach solution should be a complete Python program that reads input from stdin and "
                      "writes output to stdout. Write {m} different solutions that solve this problem, each using "
                      "a different approach. Wrap each solution in a ```python``` code block and separate them "
                      "with '---'."),
}
#: the signature the authors' prompt shows when the starter code has no ``def``
PAPER_NO_SIGNATURE = "def solve(...):"
PROMPT_STYLES = ("full", "compact", "paper")
_FENCE = "```"
_SEPARATOR = re.compile(r"^\s*---+\s*$")


def _drop_self(text: str) -> str:
    """Method parameters as a plain function's: the authors show LeetCode's ``(self, x)`` as ``(x)``."""
    return text.replace("(self, ", "(").replace("(self)", "()")


def paper_prompt(data: dict[str, Any], m: int) -> str:
    """The authors' prompt for a problem's data and m answers (``PAPER_TAILS``): the statement as
    stored (``self`` dropped from signatures in it), then the format instructions for its test type,
    with the first ``def`` line of the starter code as the signature of a functional problem."""
    starter = data.get("starter_code") or ""
    if "def " in starter:
        signature = "def " + _drop_self(starter.split("def ", 1)[1].split("\n", 1)[0].strip())
    else:
        signature = PAPER_NO_SIGNATURE
    kind = "functional" if data["mode"] == "functional" else "stdin"
    return _drop_self(data["content"]) + PAPER_TAILS[(kind, m > 1)].format(signature=signature, m=m)


# ---- data ---------------------------------------------------------------------------------------
def decode_private_tests(blob: str) -> list[dict[str, Any]]:
    """LCB stores private tests as JSON (old releases) or base64(zlib(pickle(json string))).

    Unpickling runs arbitrary code from the data file, hence only behind ``trust_private_tests``."""
    try:
        value = json.loads(blob)
    except ValueError:
        value = json.loads(pickle.loads(zlib.decompress(base64.b64decode(blob.encode("utf-8")))))
    if not isinstance(value, list):
        raise ValueError(f"expected a list of tests, got {type(value).__name__}")
    return value


def parse_contest_date(value: Any) -> _dt.datetime:
    if isinstance(value, _dt.datetime):
        return value.replace(tzinfo=None)
    if hasattr(value, "to_pydatetime"):  # pandas Timestamp from parquet
        return value.to_pydatetime().replace(tzinfo=None)
    if isinstance(value, _dt.date):
        return _dt.datetime(value.year, value.month, value.day)
    if isinstance(value, str):
        return _dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00")).replace(tzinfo=None)
    raise ValueError(f"not a date: {type(value).__name__}")


def select_tests(tests: list[dict[str, str]], k: int = MAX_TESTS,
                 max_bytes: int = MAX_TEST_BYTES) -> list[dict[str, str]]:
    """VPO's rule: drop tests over ``max_bytes`` (input + output, UTF-8), keep the ``k`` smallest
    (stable: ties keep file order), ordered by size."""
    sized = [(len(t["input"].encode()) + len(t["output"].encode()), i, t) for i, t in enumerate(tests)]
    sized = [s for s in sized if s[0] <= max_bytes]
    sized.sort(key=lambda s: (s[0], s[1]))
    return [t for _, _, t in sized[:k]]


def _str_field(row: Row, key: str, *, allow_empty: bool = True) -> str:
    if key not in row.data:
        raise row.error("missing field", key)
    v = row.data[key]
    if not isinstance(v, str) or (not allow_empty and not v.strip()):
        raise row.error(f"expected a {'non-empty ' if not allow_empty else ''}string, got {v!r:.40}", key)
    return v


def _tests_from(row: Row, raw: Any, key: str) -> list[dict[str, str]]:
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError as exc:
            raise row.error(f"invalid JSON ({exc})", key) from exc
    if not isinstance(raw, list):
        raise row.error(f"expected a list of tests, got {type(raw).__name__}", key)
    out = []
    for i, t in enumerate(raw):
        if not isinstance(t, dict):
            raise row.error("expected an object", f"{key}[{i}]")
        for f in ("input", "output"):
            if not isinstance(t.get(f), str):
                raise row.error("expected a string", f"{key}[{i}].{f}")
        tt = t.get("testtype", "stdin")
        if tt not in ("stdin", "functional"):
            raise row.error(f"unknown testtype {tt!r}", f"{key}[{i}].testtype")
        out.append({"input": t["input"], "output": t["output"], "testtype": tt})
    return out


def problem_from_row(row: Row, *, trust_private_tests: bool = False, test_source: str = "auto",
                     max_tests: int = MAX_TESTS, max_test_bytes: int = MAX_TEST_BYTES) -> Problem | None:
    """One LCB row -> Problem (None when no test survives the size filter). Bad fields -> DataError."""
    qid = _str_field(row, "question_id", allow_empty=False)
    content = _str_field(row, "question_content", allow_empty=False)
    platform = _str_field(row, "platform", allow_empty=False)
    starter = row.data.get("starter_code") or ""
    if not isinstance(starter, str):
        raise row.error("expected a string", "starter_code")
    try:
        date = parse_contest_date(row.data.get("contest_date"))
    except (ValueError, TypeError) as exc:
        raise row.error(f"unparsable date ({exc})", "contest_date") from exc
    meta_raw = row.data.get("metadata", "{}") or "{}"
    try:
        meta = json.loads(meta_raw) if isinstance(meta_raw, str) else meta_raw
    except ValueError as exc:
        raise row.error(f"invalid JSON ({exc})", "metadata") from exc
    if not isinstance(meta, dict):
        raise row.error("expected a JSON object", "metadata")
    public = _tests_from(row, row.data.get("public_test_cases", "[]"), "public_test_cases")
    private: list[dict[str, str]] = []
    blob = row.data.get("private_test_cases")
    if blob and trust_private_tests and test_source in ("auto", "private", "all"):
        try:
            private = _tests_from(row, decode_private_tests(blob) if isinstance(blob, str) else blob,
                                  "private_test_cases")
        except DataError:
            raise
        except Exception as exc:  # base64/zlib/pickle errors
            raise row.error(f"cannot decode ({type(exc).__name__}: {exc})", "private_test_cases") from exc
    elif test_source == "private" and not trust_private_tests:
        raise row.error("private tests need trust_private_tests=True (decoding unpickles the data)",
                        "private_test_cases")
    if test_source == "public" or (test_source == "auto" and not private):
        tests, source = public, "public"
    elif test_source == "private" or test_source == "auto":
        tests, source = private, "private"
    elif test_source == "all":
        # each test remembers its origin, so `public-tests` selection can rank on the public ones
        tests = [{**t, "public": True} for t in public] + [{**t, "public": False} for t in private]
        source = "public+private" if private else "public"
    else:
        raise ValueError(f"unknown test_source {test_source!r}; known: auto, public, private, all")
    types = {t["testtype"] for t in tests}
    if len(types) > 1:
        raise row.error("mixed stdin and functional tests", "public_test_cases")
    mode = "functional" if types == {"functional"} else "stdin"
    func_name = meta.get("func_name")
    if mode == "functional" and not isinstance(func_name, str):
        raise row.error("functional tests need metadata.func_name", "metadata")
    kept = select_tests(tests, max_tests, max_test_bytes)
    if not kept:
        return None
    data = {
        "question_id": qid, "title": row.data.get("question_title", ""), "content": content,
        "platform": platform, "starter_code": starter, "difficulty": row.data.get("difficulty", ""),
        "contest_date": date.isoformat(), "mode": mode, "func_name": func_name if mode == "functional" else None,
        "tests": [{"input": t["input"], "output": t["output"]} for t in kept], "n_tests": len(kept),
    }
    if test_source == "all":
        data["public"] = [bool(t.get("public", True)) for t in kept]
    info = {"platform": platform, "difficulty": data["difficulty"], "contest_date": data["contest_date"],
            "n_tests": len(kept), "test_source": source, "source": f"{row.path}:{row.line}"}
    return Problem(id=qid, data=data, meta=info)


def in_split(date: _dt.datetime, split: str, window: tuple[_dt.datetime, _dt.datetime] = TEST_WINDOW) -> bool:
    if split == "test":
        return window[0] <= date < window[1]
    if split == "train":
        return date < window[0]
    if split == "all":
        return True
    raise KeyError(f"unknown split {split!r}; known: train, test, all")


def _is_hub(path: str | None) -> bool:
    """``path`` names the hub release rather than local files."""
    return path in ("hub", f"hub:{HUB_ID}", HUB_ID)


def hub_files(files: Sequence[str] = HUB_FILES, revision: str | None = None) -> list[Path]:
    """Download the raw test*.jsonl files of the hub repo (its loading script is broken for
    datasets >= 4, so the files are read directly)."""
    try:
        from huggingface_hub import hf_hub_download
    except ImportError as exc:  # pragma: no cover
        raise DataError("huggingface_hub is needed to download LiveCodeBench", path=f"hub:{HUB_ID}") from exc
    out = []
    for name in files:
        try:
            out.append(Path(hf_hub_download(HUB_ID, name, repo_type="dataset", revision=revision)))
        except Exception as exc:
            raise DataError(f"could not download ({type(exc).__name__}: {exc}); pass local files with --data-path "
                            f"(JSONL/parquet) instead", path=f"hub:{HUB_ID}/{name}") from exc
    return out


# ---- answers ------------------------------------------------------------------------------------
def extract_code(text: Any) -> str | None:
    """LiveCodeBench's rule: the text between the last two lines containing a ``` fence."""
    if not isinstance(text, str):
        return None
    lines = text.split("\n")
    fences = [i for i, ln in enumerate(lines) if _FENCE in ln]
    if len(fences) < 2:
        return None
    code = "\n".join(lines[fences[-2] + 1: fences[-1]])
    return code if code.strip() else None


def _closed_blocks(text: str) -> list[str]:
    """Every complete fenced block in order (opening fence line .. next fence line)."""
    out, cur = [], None
    for ln in text.split("\n"):
        if _FENCE in ln:
            if cur is None:
                cur = []
            else:
                out.append("\n".join(cur))
                cur = None
        elif cur is not None:
            cur.append(ln)
    return out


def split_chain(text: Any, m: int) -> list[str | None]:
    """m programs of a multi-answer completion.

    Segments are separated by ``---`` lines outside code fences; each segment's program is taken the
    LCB way (last two fence lines), segments without a closed block are skipped (reasoning). A model
    that forgot the separators but wrote several blocks gets one answer per closed block. A truncated
    chain keeps the programs whose block closed. Missing answers are None.
    """
    if not isinstance(text, str) or m <= 0:
        return [None] * max(m, 0)
    segments, cur, in_fence = [], [], False
    for ln in text.split("\n"):
        if _FENCE in ln:
            in_fence = not in_fence
        if not in_fence and _SEPARATOR.match(ln) and _FENCE not in ln:
            segments.append("\n".join(cur))
            cur = []
        else:
            cur.append(ln)
    segments.append("\n".join(cur))
    codes: list[str | None]
    if len(segments) == 1:
        codes = [b for b in _closed_blocks(segments[0]) if b.strip()]
    else:
        codes = []
        for seg in segments:
            if _closed_blocks(seg):
                codes.append(extract_code(seg))
    codes = codes[:m]
    return codes + [None] * (m - len(codes))


def normalized_ast(code: str | None) -> str | None:
    """Formatting-, comment- and docstring-insensitive form of a program (duplicate detection)."""
    if code is None:
        return None
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return "raw:" + "\n".join(ln.rstrip() for ln in code.strip().splitlines())
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                and isinstance(body, list) and body and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    try:
        return ast.dump(tree, annotate_fields=False, include_attributes=False)
    except RecursionError:
        return "raw:" + code.strip()


# ---- the task -----------------------------------------------------------------------------------
class LiveCodeBench(Benchmark):
    """Options: ``path`` (file/dir or "hub"), ``trust_private_tests`` (False), ``test_source``
    ("auto": private tests when trusted and present, else public), ``workers`` (sandbox pool size;
    default one per core), ``timeout_s`` (6), ``max_tests`` (16), ``max_test_bytes`` (8192),
    ``first_failure`` (False: run every test for the per-test reward vector; True: stop at the first
    failing test as LiveCodeBench does, for pass@k-only runs), ``wall_factor`` (1.0: a test ends after
    ``timeout_s`` of wall or CPU time, LCB's semantics; e.g. 3.0: CPU time decides and wall time may
    reach 3x, so a loaded machine does not turn slow-but-correct programs into time limits),
    ``hub_files`` / ``revision`` for hub downloads."""

    name = "livecodebench"
    #: generic labels; a problem's reward vector has ``n_tests`` <= 16 entries, named by components_for
    component_names: ClassVar[tuple[str, ...]] = tuple(f"test_{i}" for i in range(1, MAX_TESTS + 1))
    splits = {"train": None, "test": None, "all": None}
    default_temperature = 0.8
    variable_d = True  # one reward component per selected test of the problem
    default_top_p = 0.95
    options_spec: ClassVar[dict[str, Option]] = {
        "path": Option(None, "data file or folder, or 'hub'"),
        "trust_private_tests": Option(False, "decode the pickled private tests"),
        "test_source": Option("auto", "which tests grade", ("auto", "public", "private", "all")),
        "test_window": Option(None, "contest-date window 'YYYY-MM-DD..YYYY-MM-DD'"),
        "workers": Option(None, "sandbox pool size (default one per core)"),
        "timeout_s": Option(TIMEOUT_S, "time limit per test (wall and CPU; see wall_factor)"),
        "max_tests": Option(MAX_TESTS, "tests per problem"),
        "max_test_bytes": Option(MAX_TEST_BYTES, "largest test input/output kept"),
        "hub_files": Option(HUB_FILES, "files of the hub dataset to download"),
        "revision": Option(None, "hub revision"),
        "visible_tests": Option(None, "tests a deployment may run for `public-tests` selection: 'public' "
                                      "(needs test_source=all) or 'half' (offline)", (None, "half", "public")),
        "first_failure": Option(False, "stop at the first failing test, as LiveCodeBench does (pass/fail "
                                       "only, faster); default runs every test for the reward vector",
                                (False, True)),
        "wall_factor": Option(WALL_FACTOR, "per-test wall-clock allowance as a multiple of timeout_s; > 1 "
                                           "lets CPU time decide (load-independent time limits)"),
        "memory_mb": Option(1024, "memory budget per candidate in MiB: all its processes, threads, tmpfs "
                                  "and memfd pages together (cgroup), and each process's address space"),
    }

    def __init__(self, **options: Any):
        super().__init__(**options)
        # ``visible_tests`` (harness/eval/selection.py, strategy public-tests): "public" ranks on the public
        # tests and scores on the private ones, so both must be graded
        if options.get("visible_tests") == "public" and options.get("test_source") != "all":
            raise ValueError("visible_tests=public needs test_source=all (and trust_private_tests=true) so that "
                             "both public and private tests are graded")
        self._limits()  # a bad memory_mb fails here, before anything is generated
        self._pool = None
        self._lock = threading.Lock()

    # ---- data -----------------------------------------------------------------------------------
    def _files(self, path: str | None) -> list[Path]:
        path = path or self.options.get("path")
        if _is_hub(path):
            return hub_files(self.options.get("hub_files", HUB_FILES), self.options.get("revision"))
        p = Path(path) if path else shared_data_dir() / "livecodebench" / DEFAULT_FILE
        if p.is_dir():
            files = sorted([*p.glob("test*.jsonl"), *p.glob("*.parquet")]) or sorted(p.glob("*.jsonl"))
            if not files:
                raise DataError("no .jsonl or .parquet files in directory", path=str(p))
            return files
        if not p.is_file():
            raise DataError("no such data file (pass one with --data-path, or --data-path hub when online)",
                            path=str(p))
        return [p]

    def local_size(self, split: str) -> int | None:
        if _is_hub(self.options.get("path")):
            return None
        try:
            return len(self.load(split))
        except DataError:  # no such local file
            return None

    def load(self, split: str, *, path: str | None = None, limit: int | None = None) -> list[Problem]:
        self.check_split(split)
        window = self.options.get("test_window")
        win = TEST_WINDOW if window is None else tuple(parse_contest_date(w) for w in window)
        out: list[Problem] = []
        seen: dict[str, tuple[int, Row]] = {}
        for fi, f in enumerate(self._files(path)):
            for row in read_rows(f):
                prob = problem_from_row(
                    row, trust_private_tests=bool(self.options.get("trust_private_tests", False)),
                    test_source=self.options.get("test_source", "auto"),
                    max_tests=int(self.options.get("max_tests", MAX_TESTS)),
                    max_test_bytes=int(self.options.get("max_test_bytes", MAX_TEST_BYTES)))
                if prob is None:
                    continue
                if prob.id in seen:
                    # the same row in two release files (overlapping hub releases) is one problem;
                    # any other repeat was dropped silently before and is an error now
                    first_file, first = seen[prob.id]
                    if first_file != fi and first.data == row.data:
                        continue
                    raise duplicate_id(prob.id, row, first, "question_id")
                seen[prob.id] = (fi, row)
                if in_split(parse_contest_date(prob.data["contest_date"]), split, win):  # type: ignore[arg-type]
                    out.append(prob)
        out.sort(key=lambda p: (p.data["contest_date"], p.id))
        return out[:limit] if limit is not None else out

    def components_for(self, problem: Problem) -> tuple[str, ...]:
        """Names of this problem's reward components (its vector has exactly this length)."""
        return self.component_names[: int(problem.data["n_tests"])]

    # ---- prompts --------------------------------------------------------------------------------
    def _question(self, problem: Problem, style: str) -> str:
        if style not in PROMPT_STYLES:
            raise ValueError(f"unknown prompt style {style!r}; known: {', '.join(PROMPT_STYLES)}")
        d = problem.data
        if d["mode"] == "functional":
            fmt = ("Complete the starter code below. Put your whole solution in one fenced Python block:\n"
                   f"```python\n{d['starter_code'].rstrip()}\n```")
        else:
            fmt = ("Read the input from standard input, solve the problem and print the answer to "
                   "standard output (do not hard-code the sample). Put the whole program in one fenced "
                   "Python block:\n```python\n# your code here\n```")
        if style == "compact":
            return f"{d['content'].strip()}\n\n{fmt}"
        return f"### Question:\n{d['content'].strip()}\n\n### Format: {fmt}\n\n### Answer:"

    def prompt(self, problem: Problem, *, style: str = "full") -> Messages:
        if style == "paper":
            return [{"role": "user", "content": paper_prompt(problem.data, 1)}]
        text = self._question(problem, style)
        msgs: Messages = [] if style == "compact" else [{"role": "system", "content": SYSTEM_PROMPT}]
        return msgs + [{"role": "user", "content": text}]

    def multi_prompt(self, problem: Problem, m: int, *, style: str = "full") -> Messages:
        if m < 1:
            raise ValueError("m must be >= 1")
        if style == "paper":
            return [{"role": "user", "content": paper_prompt(problem.data, m)}]
        ask = (f"\n\nWrite {m} different solutions. Each must use a different approach (a different "
               "algorithm or technique, not a renamed copy) and be complete on its own. Put each in its "
               "own fenced ```python block and separate consecutive solutions with a line containing "
               "only ---.")
        text = self._question(problem, style) + ask
        msgs: Messages = [] if style == "compact" else [{"role": "system", "content": SYSTEM_PROMPT}]
        return msgs + [{"role": "user", "content": text}]

    # ---- parsing --------------------------------------------------------------------------------
    def parse(self, completion: str, m: int | None = None) -> list[str | None]:
        try:
            if m is None:
                return [extract_code(completion)]
            return split_chain(completion, m)
        except Exception:  # the contract: never raise on model text
            return [None] * (1 if m is None else max(m, 0))

    def parse_single(self, completion: str) -> str | None:
        return extract_code(completion)

    def dedup_key(self, problem: Problem, answer: str | None, r: np.ndarray) -> Any:
        """Two programs are duplicates when their ASTs match (formatting/comments/docstrings aside)."""
        return normalized_ast(answer)

    # ---- grading --------------------------------------------------------------------------------
    @property
    def pool(self):
        """Sandbox pool, created on first use (importing the task starts no processes)."""
        with self._lock:
            if self._pool is None:
                from vpo_harness.harness.core.sandbox import SandboxPool

                self._pool = SandboxPool(self.options.get("workers"), self._limits())
            return self._pool

    def _limits(self):
        from vpo_harness.harness.core.sandbox import Limits

        raw = self.options.get("memory_mb", 1024)
        try:
            mb = int(raw)
        except (TypeError, ValueError):
            raise ValueError(f"livecodebench option memory_mb={raw!r}: expected a whole number of MiB") from None
        if mb < 64:
            raise ValueError(f"livecodebench option memory_mb={mb}: at least 64 "
                             "(the interpreter alone needs about 20 MiB)")
        return Limits(address_space_bytes=mb << 20, memory_bytes=mb << 20)

    def close(self) -> None:
        with self._lock:
            if self._pool is not None:
                self._pool.close()
                self._pool = None

    def grade(self, problem: Problem, code: str | None):
        """Full grade of one program (verdict per test, isolation, timings); None code -> None."""
        if code is None:
            return None
        from vpo_harness.benchmarks.livecodebench_judge import grade_program

        d = problem.data
        return grade_program(self.pool, code, d["mode"], d.get("func_name"), d["tests"],
                             timeout_s=float(self.options.get("timeout_s", TIMEOUT_S)),
                             first_failure=bool(self.options["first_failure"]),
                             wall_factor=float(self.options["wall_factor"]), base_limits=self.pool.limits)

    def grade_many(self, problem: Problem, codes: Sequence[str | None]) -> list[Any]:
        """Grades of several programs of one problem, in parallel on the sandbox pool. Identical
        programs are graded once."""
        unique = list(dict.fromkeys(c for c in codes if c is not None))
        if not unique:
            return [None] * len(codes)
        with ThreadPoolExecutor(max_workers=max(1, min(len(unique), self.pool.workers))) as ex:
            grades = dict(zip(unique, ex.map(lambda c: self.grade(problem, c), unique)))
        return [grades.get(c) if c is not None else None for c in codes]

    @staticmethod
    def _vector(grade: Any, n: int) -> np.ndarray:
        if grade is None:
            return np.zeros(n)
        return np.array([1.0 if v == "pass" else 0.0 for v in grade.verdicts], dtype=float)

    def reward(self, problem: Problem, answer: str | None) -> np.ndarray:
        return self.rewards(problem, [answer])[0]

    def rewards(self, problem: Problem, answers: Sequence[str | None]) -> np.ndarray:
        """(len(answers), n_tests) matrix: the whole chain/pool graded in parallel in the sandbox."""
        n = int(problem.data["n_tests"])
        if not answers:
            return np.zeros((0, n))
        grades = self.grade_many(problem, list(answers))
        return np.stack([self._vector(g, n) for g in grades])

    def score(self, problem: Problem, answers: Sequence[str | None]) -> tuple[np.ndarray, list[dict[str, Any]] | None]:
        """Rewards plus, per answer, the verdict code of every test and the isolation in force."""
        n = int(problem.data["n_tests"])
        if not answers:
            return np.zeros((0, n)), []
        grades = self.grade_many(problem, list(answers))
        details = [{"verdicts": None, "reason": "no code block"} if g is None else
                   {"verdicts": list(g.verdicts), "times": list(g.times), "wall_s": round(g.wall_s, 4),
                    "runs": g.runs, "isolation": g.isolation, **({"notes": list(g.notes)} if g.notes else {}),
                    **({"errors": [e[-300:] for e in g.details]} if any(g.details) else {})}
                   for g in grades]
        return np.stack([self._vector(g, n) for g in grades]), details

    @property
    def max_d(self) -> int:
        return int(self.options.get("max_tests", MAX_TESTS))

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        d["reward_length"] = f"per problem: n_tests (<= {self.max_d}); see components_for"
        from vpo_harness.harness.core.sandbox import Sandbox

        # raises SandboxUnavailable (one clear line from `vpo run`) before anything is generated when
        # the sealed view cannot be set up and --unsafe-sandbox was not given; starts no zygote
        d["isolation"] = Sandbox(self._limits()).isolation_record()  # the budget memory_mb sets
        return d
