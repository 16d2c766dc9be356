"""ToolRL rlla function calling (Qian et al. 2025; d = 4): pick tools and fill their parameters.

A row holds a system prompt (tool list + output format), the user dialogue, and the gold assistant turn
``<think>..</think>`` + optional ``<tool_call>`` (one JSON object per line: ``{"name", "parameters"}``)
+ optional ``<response>``. r = [format, tool_name, arg_keys, arg_values], task scalar = mean (option
``scale=sum``: the sum, 0..4, the scale on which the authors report ToolRL's best@k, ``vpo_tasks/tool.py``
``evaluate``: ``best_of_k_curve(sums, ...)``; best@k and its standard error are then exactly d = 4 times
the mean's, pass@k and diversity unchanged):

- format = 1 iff the answer has a think block and has tool calls exactly when the gold has. "Has a think
  block" means a closing ``</think>`` (a chat template may open the block in the prompt). With gold
  calls, the answer needs at least one parseable call; without, any non-empty ``<tool_call>`` body is
  a format error.
- tool_name = multiset F1 of called tool names (casefolded, whitespace collapsed).
- arg_keys = mean over aligned call pairs of the set-F1 of parameter keys; arg_values = mean over the
  pairs of the per-gold-key value match (missing key 0). A gold or predicted call left unaligned adds a
  pair scoring 0 to both means, so the denominator is max(#gold, #pred).
- Alignment is greedy over gold calls in order: take the unused predicted call with the same name and
  the largest key overlap. Option ``align``: ``"loose"`` (default, as the VPO authors' scorer) lets a
  call with another name be aligned when no same-name call is left (preferring key overlap), so a wrong
  tool name alone costs only tool_name; ``"strict"`` aligns same-name calls only, so a wrong name also
  zeroes that call's arg_keys and arg_values.
- Value match: booleans and numbers exact (numeric strings accepted: "2" matches 2; booleans also as
  "true"/"false"), strings SQuAD token F1, lists multiset match of element values, objects the mean
  match over the gold keys, null matches null/"none"/"null".
- Gold without calls (response-only turns): tool_name = arg_keys = arg_values = 1 iff the answer has no
  calls either, else 0.

Option ``parse``:
- ``paper`` (default): the VPO authors' training scorer (``vpo_tasks/tool.py`` ``score_one``), which
  ``shared/data/toolrl/authors_scores.jsonl`` pins row for row. Only the *first* ``<tool_call>`` block
  counts (tags case-sensitive, reasoning not skipped: a call mentioned inside ``<think>`` is the call);
  "has a think block" needs both ``<think>`` and ``</think>``; a block is a JSON array or a stream of
  objects (whitespace/commas between them) read until the first malformed object (which ends the
  stream: a malformed first call loses the calls after it too); ``arguments`` is accepted for
  ``parameters`` (not as a JSON string). Gold calls are read the same way. Names and values are
  normalised lower -> punctuation removed -> spaces collapsed, *no* article removal ("the 1" vs "1" is
  F1 2/3); value match: booleans by truthiness (``"no"`` matches ``true``), numbers exact or as numeric
  strings, lists multiset F1, objects key-set F1, strings token F1. Alignment is always "loose" (a
  same-name call scores 100 plus key overlap, any leftover call can pair); tool_name / arg_keys /
  arg_values are 1 when neither side has calls, even for an empty reply (format is then 0). The
  authors' single-answer *evaluation* also prepends an empty ``<think>\n\n</think>\n\n`` to each reply
  (Qwen3's no-thinking prefill: with ``enable_thinking=False`` the template writes that block into the
  prompt, so the reply itself has none); option ``prefill_think`` does the same (below).

Option ``prefill_think`` (default False; ``--protocol paper`` sets it for single-answer runs): single
answers are scored as ``<think>\n\n</think>\n\n`` + reply, and an empty or blank reply is the zero
vector, as in the authors' evaluation (``vpo_tasks/tool.py`` ``evaluate``). Chains of m answers are
scored as written: each ``<response_i>`` must carry its own think block (the authors' choice too).
- ``lenient`` (benchmarks.md's wording, this project's earlier reading): everything up to the last
  ``</think>`` is reasoning (R1-style think text often mentions ``<tool_call>``); every ``<tool_call>``
  block after it counts; a block may hold one JSON object per line, objects separated by commas, or a
  JSON array, and unparseable text inside a block is skipped; ``arguments`` is accepted for
  ``parameters`` (also as a JSON string); an empty reply is the zero vector; the rules above the
  ``parse`` option (SQuAD normalisation, typed value match, ``align`` option) apply.
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from vpo_harness.benchmarks.base import Benchmark, DataError, Messages, Option, Problem
from vpo_harness.benchmarks.tags import find_tags, first_block
from vpo_harness.benchmarks.rowfiles import Row, check_unique_ids, hub_rows, looks_like_hub_id, need, read_rows
from vpo_harness.benchmarks.textnorm import authors_normalize, authors_token_f1, multiset_f1, set_f1, squad_normalize, token_f1
from vpo_harness.harness.core.paths import shared_data_dir

GITHUB_RAW = "https://raw.githubusercontent.com/qiancheng0/ToolRL/main/dataset/rlla_4k/{split}.parquet"
LOCAL_FILES = {"test": "toolrl/rlla_4k_test.jsonl", "sft": "toolrl/rlla_sft.jsonl"}
_THINK_END = re.compile(r"</think>", re.I)
#: what Qwen3's template pre-fills with enable_thinking=False; the authors prepend it before scoring
QWEN3_NO_THINK_PREFIX = "<think>\n\n</think>\n\n"
#: option ``scale``: how the task scalar combines the 4 components
SCALES = ("mean", "sum")
_DECODER = json.JSONDecoder()

Call = dict[str, Any]  # {"name": str, "parameters": dict}

#: the authors' multi-attempt instruction (``vpo_tasks/tool.py``), appended to the user turn verbatim
MULTI_BLOCK = (
    "\n\n---\n"
    "ADDITIONAL INSTRUCTION (overrides the single-attempt output format above): "
    "Provide {m} different attempts at the task. Wrap each attempt in numbered "
    "outer tags <response_1>...</response_1> through <response_{m}>...</response_{m}>. "
    "Inside each <response_i>, follow the original output format from the system "
    "prompt (your <think>, optional <tool_call>, and inner <response> sections). "
    "The {m} attempts should be genuinely different — different tool choices, "
    "different argument values, or different reasoning — not paraphrases. "
    "Closing tags are required on every outer attempt."
)


# ---- parsing ------------------------------------------------------------------------------------

def split_think(text: str) -> tuple[bool, str]:
    """(has a closed think block, the text after the last ``</think>``)."""
    ends = list(_THINK_END.finditer(text))
    if not ends:
        return False, text
    return True, text[ends[-1].end():]


#: a block with this many ``{`` that start no JSON value is garbage; stop looking for calls in it
#: (every failed attempt may scan to the end, so without a cap ``"{" * n`` is quadratic)
MAX_FAILED_STARTS = 256


def _json_objects(block: str) -> list[Any]:
    """JSON values in a block: an array's items, or a stream of values; garbage is skipped."""
    text = block.strip()
    if text.startswith("["):
        try:
            arr = json.loads(text)
            return arr if isinstance(arr, list) else []
        except (json.JSONDecodeError, RecursionError):
            pass
    out, i, n, failures = [], 0, len(text), 0
    while i < n and failures < MAX_FAILED_STARTS:
        j = text.find("{", i)
        if j < 0:
            break
        try:
            obj, end = _DECODER.raw_decode(text, j)
        except (json.JSONDecodeError, RecursionError):
            failures += 1  # each failed start may cost O(len): capped so the scan stays linear
            i = j + 1
            continue
        out.append(obj)
        i = end
    return out


def _as_call(obj: Any) -> Call | None:
    if not isinstance(obj, dict):
        return None
    if "name" not in obj and isinstance(obj.get("function"), dict):  # OpenAI-style wrapper
        obj = obj["function"]
    name = obj.get("name")
    if not isinstance(name, str):
        return None
    params = obj.get("parameters", obj.get("arguments", {}))
    if isinstance(params, str):
        try:
            params = json.loads(params)
        except (json.JSONDecodeError, RecursionError):
            params = {}
    return {"name": name, "parameters": params if isinstance(params, dict) else {}}


def parse_calls(text: str) -> tuple[list[Call], bool]:
    """(calls after the reasoning, whether any ``<tool_call>`` block there has a non-empty body)."""
    _, body = split_think(text)
    calls: list[Call] = []
    nonempty = False
    for block in find_tags(body, "tool_call"):
        nonempty = nonempty or bool(block.strip())
        calls.extend(c for c in map(_as_call, _json_objects(block)) if c is not None)
    return calls, nonempty


# ---- scoring ------------------------------------------------------------------------------------

def _norm_name(name: str) -> str:
    return " ".join(name.casefold().split())


def _number(x: Any) -> float | None:
    if isinstance(x, bool):
        return None
    if isinstance(x, (int, float)):
        return float(x)
    if isinstance(x, str):
        try:
            v = float(x.strip())
        except ValueError:
            return None
        return v if math.isfinite(v) else None
    return None


def _text(x: Any) -> str:
    if isinstance(x, str):
        return x
    if isinstance(x, bool):
        return "true" if x else "false"
    try:
        return json.dumps(x, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(x)


def value_match(pred: Any, gold: Any) -> float:
    """How well a predicted argument value matches the gold one, in [0, 1]."""
    if gold is None:
        return float(pred is None or (isinstance(pred, str) and pred.strip().lower() in ("none", "null", "")))
    if isinstance(gold, bool):
        if isinstance(pred, bool):
            return float(pred == gold)
        return float(isinstance(pred, str) and pred.strip().lower() == ("true" if gold else "false"))
    if isinstance(gold, (int, float)):
        p = _number(pred)
        return float(p is not None and math.isclose(p, float(gold), rel_tol=1e-9, abs_tol=1e-12))
    if isinstance(gold, list):
        preds = pred if isinstance(pred, list) else [pred]
        return multiset_f1([_canon(v) for v in preds], [_canon(v) for v in gold])
    if isinstance(gold, dict):
        if not isinstance(pred, dict):
            return 0.0
        if not gold:
            return float(not pred)
        return sum(value_match(pred[k], v) if k in pred else 0.0 for k, v in gold.items()) / len(gold)
    if isinstance(gold, str):
        g, p = _number(gold), _number(pred)
        if g is not None and p is not None:  # "2" vs 2 or "2.0": a number written as text is still exact
            return float(math.isclose(p, g, rel_tol=1e-9, abs_tol=1e-12))
    return token_f1(_text(pred), str(gold))


def _canon(v: Any) -> str:
    """A hashable canonical form of a list element for multiset matching."""
    n = _number(v)
    if n is not None:
        return f"#{n!r}"
    if isinstance(v, str):
        return squad_normalize(v)
    return squad_normalize(_text(v))


def align_calls(pred: list[Call], gold: list[Call], *, strict: bool = False) -> list[tuple[Call | None, Call | None]]:
    """Greedy (gold, pred) pairs; unaligned calls on either side pair with None."""
    used = [False] * len(pred)
    pairs: list[tuple[Call | None, Call | None]] = []
    for g in gold:
        gname, gkeys = _norm_name(g["name"]), set(g["parameters"])
        best, best_score = -1, (-1, -1)
        for j, p in enumerate(pred):
            same = _norm_name(p["name"]) == gname
            if used[j] or (strict and not same):
                continue
            score = (int(same), len(gkeys & set(p["parameters"])))
            if score > best_score:
                best, best_score = j, score
        if best >= 0:
            used[best] = True
            pairs.append((g, pred[best]))
        else:
            pairs.append((g, None))
    pairs.extend((None, p) for j, p in enumerate(pred) if not used[j])
    return pairs


def score_calls(pred: list[Call], gold: list[Call], *, strict: bool = False) -> tuple[float, float, float]:
    """(tool_name, arg_keys, arg_values) of predicted calls against gold calls."""
    if not gold:
        ok = float(not pred)
        return ok, ok, ok
    name_f1 = multiset_f1([_norm_name(c["name"]) for c in pred], [_norm_name(c["name"]) for c in gold])
    keys, values = [], []
    for g, p in align_calls(pred, gold, strict=strict):
        if g is None or p is None:
            keys.append(0.0)
            values.append(0.0)
            continue
        gp, pp = g["parameters"], p["parameters"]
        keys.append(set_f1(pp, gp))
        values.append(1.0 if not gp else sum(value_match(pp[k], v) if k in pp else 0.0
                                             for k, v in gp.items()) / len(gp))
    return name_f1, sum(keys) / len(keys), sum(values) / len(values)


# ---- the authors' scorer (parse=paper) ------------------------------------------------------------------
PARSE_MODES = ("paper", "lenient")


def _object_stream(text: str) -> list[Any]:
    """JSON objects one after another (whitespace / commas between), read until the first thing that is
    not a complete, valid object: the authors' ``_parse_json_object_stream``."""
    out: list[Any] = []
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i] in " \t\r\n,":
            i += 1
        if i >= n or text[i] != "{":
            break
        depth, in_str, escape, start = 0, False, False, i
        while i < n:
            c = text[i]
            if escape:
                escape = False
            elif c == "\\":
                escape = True
            elif c == '"':
                in_str = not in_str
            elif not in_str:
                if c == "{":
                    depth += 1
                elif c == "}":
                    depth -= 1
                    if depth == 0:
                        i += 1
                        break
            i += 1
        if depth != 0:
            break
        try:
            obj = json.loads(text[start:i])
        except (json.JSONDecodeError, RecursionError):
            break
        if isinstance(obj, dict):
            out.append(obj)
    return out


def paper_calls(block: str | None) -> list[Call]:
    """Calls of one ``<tool_call>`` body as the authors read it."""
    text = (block or "").strip()
    if not text:
        return []
    if text.startswith("["):
        try:
            arr = json.loads(text)
        except (json.JSONDecodeError, RecursionError):
            arr = []
        objs = [o for o in arr if isinstance(o, dict)] if isinstance(arr, list) else []
    else:
        objs = _object_stream(text)
    calls = []
    for obj in objs:
        params = obj.get("parameters", obj.get("arguments", {}))
        calls.append({"name": str(obj.get("name", "")), "parameters": params if isinstance(params, dict) else {}})
    return calls


def paper_structure(text: str) -> tuple[bool, bool, list[Call]]:
    """(has ``<think>..</think>``, first ``<tool_call>`` body non-empty, its calls)."""
    block = first_block(text, "tool_call", ignore_case=False)
    body = block.strip() if block is not None else ""
    return first_block(text, "think", ignore_case=False) is not None, bool(body), paper_calls(body)


def _pnorm(x: Any) -> str:
    return authors_normalize(x, strip_articles=False)


def paper_value_match(pred: Any, gold: Any) -> float:
    """The authors' ``_value_match`` (types decide the rule; see the module docstring)."""
    if isinstance(gold, bool) or isinstance(pred, bool):
        return float(bool(gold) == bool(pred))
    if isinstance(gold, (int, float)):
        if isinstance(pred, (int, float)):
            return float(gold == pred)
        try:
            return float(abs(float(str(pred)) - float(gold)) < 1e-9)
        except (ValueError, TypeError, OverflowError):
            return float(_pnorm(pred) == _pnorm(gold))
    if isinstance(gold, list):
        preds = pred if isinstance(pred, list) else [pred]
        return multiset_f1([_pnorm(x) for x in preds], [_pnorm(x) for x in gold])
    if isinstance(gold, dict):
        return set_f1(pred.keys(), gold.keys()) if isinstance(pred, dict) else 0.0
    if isinstance(gold, str):
        if not isinstance(pred, str):
            return float(_pnorm(pred) == _pnorm(gold))
        return authors_token_f1(pred, gold, strip_articles=False)
    return float(_pnorm(pred) == _pnorm(gold))


def paper_score_calls(pred: list[Call], gold: list[Call]) -> tuple[float, float, float]:
    """The authors' ``_score_calls``: (tool_name, arg_keys, arg_values)."""
    if not pred and not gold:
        return 1.0, 1.0, 1.0
    name_f1 = multiset_f1([_pnorm(c["name"]) for c in pred], [_pnorm(c["name"]) for c in gold])
    used = [False] * len(pred)
    pairs: list[tuple[Call | None, Call | None]] = []
    for g in gold:
        gname, gkeys = _pnorm(g["name"]), set(g["parameters"])
        best, best_score = -1, -1
        for j, p in enumerate(pred):
            if used[j]:
                continue
            pname = _pnorm(p["name"])
            score = (100 if pname and pname == gname else 0) + len(set(p["parameters"]) & gkeys)
            if score > best_score:
                best, best_score = j, score
        if best >= 0:
            used[best] = True
        pairs.append((g, pred[best] if best >= 0 else None))
    pairs.extend((None, p) for j, p in enumerate(pred) if not used[j])
    keys = values = 0.0
    for g, p in pairs:
        if g is None or p is None:
            continue
        gp, pp = g["parameters"], p["parameters"]
        keys += set_f1(pp.keys(), gp.keys())
        values += 1.0 if not gp else sum(paper_value_match(pp[k], gp[k]) for k in gp if k in pp) / len(gp)
    n = max(len(pairs), 1)
    return name_f1, keys / n, values / n


def paper_reward(text: str, gold: list[Call]) -> np.ndarray:
    """[format, tool_name, arg_keys, arg_values] of one reply: the authors' ``score_response``."""
    has_think, nonempty, calls = paper_structure(text)
    fmt = has_think and (bool(calls) if gold else not nonempty)
    return np.array([float(fmt), *paper_score_calls(calls, gold)], dtype=float)


# ---- the task -----------------------------------------------------------------------------------

class ToolRL(Benchmark):
    """Options: ``parse`` ("paper" | "lenient"), ``align`` ("loose" | "strict", lenient only), ``hub``
    (False); see the module doc."""

    name: ClassVar[str] = "toolrl"
    component_names: ClassVar[tuple[str, ...]] = ("format", "tool_name", "arg_keys", "arg_values")
    splits: ClassVar[dict[str, int | None]] = {"train": 3920, "test": 80, "sft": None}
    answer_tag: ClassVar[str] = "response"
    strip_reasoning: ClassVar[bool] = False  # the format reward needs the <think> block
    default_temperature: ClassVar[float] = 0.7
    default_top_p: ClassVar[float] = 0.95

    options_spec: ClassVar[dict[str, Option]] = {
        "align": Option("loose", "how predicted calls are matched to gold calls", ("loose", "strict")),
        "hub": Option(False, "load from the hub even when local files exist"),
        "parse": Option("paper", "how calls are read: the authors' scorer or the lenient reader", PARSE_MODES),
        "scale": Option("mean", "task scalar: the mean of the 4 components (0..1), or their sum (0..4, "
                                "the authors' reporting scale)", SCALES),
        "prefill_think": Option(False, "single answers: score Qwen3's empty think block + the reply, as the "
                                       "authors' evaluation does (empty reply: zero vector)", (False, True)),
    }

    def __init__(self, **options: Any):
        super().__init__(**options)
        self.parse_mode = self.options["parse"]

    # ---- data -------------------------------------------------------------------------------------
    def load(self, split: str, *, path: str | None = None, limit: int | None = None) -> list[Problem]:
        self.check_split(split)
        how = ("Pass path=<rlla_4k {train,test}.parquet or .jsonl> (processed rows) or an SFT file of "
               "{instruction, input, output} items; offline defaults exist for splits test and sft.")
        if path is not None and not looks_like_hub_id(path):
            rows = read_rows(path)
        elif path is None and (local := self._local_file(split)) is not None:
            rows = read_rows(local)
        elif split == "sft":
            raise DataError(f"the SFT items have no hub copy. {how}", path=str(shared_data_dir() / LOCAL_FILES["sft"]))
        elif path is not None:
            rows = hub_rows(path, split, how_to_fix=how)
        else:
            rows = hub_rows("parquet", split, data_files={split: GITHUB_RAW.format(split=split)}, how_to_fix=how)
        problems = [self._problem(split, r) for r in rows]
        check_unique_ids(((p.id, r) for p, r in zip(problems, rows)), "extra_info.index")
        return problems[:limit] if limit is not None else problems

    def _local_file(self, split: str) -> Path | None:
        if self.options["hub"] or split not in LOCAL_FILES:
            return None
        f = shared_data_dir() / LOCAL_FILES[split]
        return f if f.is_file() else None

    def local_size(self, split: str) -> int | None:
        return len(self.load(split)) if self._local_file(split) is not None else None

    def _problem(self, split: str, row: Row) -> Problem:
        d = row.data
        if "prompt" in d:  # processed rlla_4k row
            system, user_msg = self._prompt_fields(row)
            gold = need(row, need(row, d, "reward_model", dict), "ground_truth", str,
                        field_path="reward_model.ground_truth")
            gold_field = "reward_model.ground_truth"
            extra = d.get("extra_info")
            index = (need(row, extra, "index", int, field_path="extra_info.index")
                     if isinstance(extra, dict) else None)
            if index is None:
                raise row.error("missing field", "extra_info.index")
        elif "instruction" in d:  # raw SFT item, checked under its own field names, then mapped
            for key in ("instruction", "input", "output"):
                need(row, d, key, str)
            mapped = sft_to_row(d, index=row.line - 1, split=split)
            system, user_msg = mapped["prompt"][0]["content"], mapped["prompt"][1]["content"]
            gold, gold_field, index = mapped["reward_model"]["ground_truth"], "output", row.line - 1
        else:
            raise row.error("neither a processed row (prompt, reward_model) nor an SFT item "
                            "(instruction, input, output)", "prompt")
        calls = _gold_calls(row, gold, gold_field)
        _, _, paper_gold = paper_structure(gold)
        data = {"system": system, "user": user_msg, "gold": gold, "gold_calls": calls,
                "paper_gold_calls": json.loads(json.dumps(paper_gold))}
        return Problem(id=f"toolrl-{split}-{index}", data=data, meta={"index": index, "num_calls": len(calls)})

    @staticmethod
    def _prompt_fields(row: Row) -> tuple[str, str]:
        msgs = need(row, row.data, "prompt", list)
        system = user_msg = None
        for i, msg in enumerate(msgs):
            if not isinstance(msg, dict):
                raise row.error("expected an object", f"prompt[{i}]")
            role = need(row, msg, "role", str, field_path=f"prompt[{i}].role")
            content = need(row, msg, "content", str, field_path=f"prompt[{i}].content")
            if role == "system":
                system = content
            elif role == "user":
                user_msg = content
        if system is None or user_msg is None:
            raise row.error("needs one system and one user message", "prompt")
        return system, user_msg

    # ---- prompts ----------------------------------------------------------------------------------
    def prompt(self, problem: Problem, *, style: str = "full") -> Messages:
        """The row's own system + user messages (the format lives in the system prompt)."""
        _check_style(style)
        return [{"role": "system", "content": problem.data["system"]},
                {"role": "user", "content": problem.data["user"]}]

    def multi_prompt(self, problem: Problem, m: int, *, style: str = "full") -> Messages:
        """The same system prompt; the multi-answer instruction is appended to the user message."""
        msgs = self.prompt(problem, style=style)
        msgs[-1]["content"] += MULTI_BLOCK.format(m=m)
        return msgs

    # ---- parsing and scoring ----------------------------------------------------------------------
    def parse(self, completion: str, m: int | None = None) -> list[str | None]:
        if m is None and self.options["prefill_think"]:
            if not isinstance(completion, str) or not completion.strip():
                return [None]
            return [self.parse_single(QWEN3_NO_THINK_PREFIX + completion)]
        if m is None or self.parse_mode != "paper":
            return super().parse(completion, m)
        # an empty block is a missing attempt (zero vector), unlike an empty single reply
        return [b if b is not None and b.strip() else None for b in self.authors_parse(completion, m)]

    def parse_single(self, completion: str) -> str | None:
        """paper: the reply as written (an empty reply is scored too: format 0, and 1 on the call
        components when the gold has no calls); lenient: None for an empty reply."""
        if self.parse_mode == "paper":
            return completion if isinstance(completion, str) else None
        return completion if isinstance(completion, str) and completion.strip() else None

    def scalar(self, r: np.ndarray) -> np.ndarray | float:
        """Mean of the components, or with ``scale=sum`` their sum (the authors' reporting scale)."""
        r = np.asarray(r, dtype=float)
        return r.sum(axis=-1) if self.options["scale"] == "sum" else r.mean(axis=-1)

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        out["scalar"] = ("format + tool_name + arg_keys + arg_values" if self.options["scale"] == "sum"
                         else "mean of the 4 components")
        return out

    def reward(self, problem: Problem, answer: str | None) -> np.ndarray:
        if self.parse_mode == "paper":
            if not isinstance(answer, str):
                return np.zeros(self.d)
            gold = problem.data.get("paper_gold_calls")
            if gold is None:
                gold = json.loads(json.dumps(paper_structure(problem.data["gold"])[2]))
            return paper_reward(answer, gold)
        if not isinstance(answer, str) or not answer.strip():
            return np.zeros(self.d)
        gold = problem.data["gold_calls"]
        has_think, _ = split_think(answer)
        calls, nonempty_block = parse_calls(answer)
        fmt = has_think and (bool(calls) if gold else not nonempty_block)
        names, keys, values = score_calls(calls, gold, strict=self.options["align"] == "strict")
        return np.array([float(fmt), names, keys, values], dtype=float)


def sft_to_row(item: dict[str, Any], *, index: int, split: str = "sft") -> dict[str, Any]:
    """A raw ``{instruction, input, output}`` item in the processed rlla_4k row format.

    Same mapping as ToolRL's ``rlla.py``: system = instruction (tools + output format), user = input
    (dialogue history), ground truth = output. Lets SFT items be exported or scored like RL rows.
    """
    return {
        "data_source": "rlla",
        "prompt": [{"content": item["instruction"], "role": "system"},
                   {"content": item["input"], "role": "user"}],
        "ability": "math",  # the label the official rows carry (a leftover of the veRL template)
        "reward_model": {"ground_truth": item["output"], "style": "rule"},
        "extra_info": {"index": index, "input": item["input"], "instruction": item["instruction"],
                       "output": item["output"], "split": split},
    }


def _gold_calls(row: Row, gold: str, field_name: str) -> list[Call]:
    """Gold calls, strictly: every non-empty line of a gold ``<tool_call>`` block is one call object."""
    _, body = split_think(gold)
    calls: list[Call] = []
    for block in find_tags(body, "tool_call"):
        for line in block.strip().splitlines():
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise row.error(f"gold tool call is not JSON ({exc.msg}): {line[:80]!r}", field_name) from exc
            call = _as_call(obj)
            if call is None or not isinstance(obj.get("parameters", obj.get("arguments", {})), dict):
                raise row.error(f"gold tool call needs a string name and a parameters object: {line[:80]!r}",
                                field_name)
            calls.append(call)
    return calls


def _check_style(style: str) -> None:
    if style not in ("full", "compact"):
        raise ValueError(f"unknown prompt style {style!r}; known: 'full', 'compact'")


__all__ = ["ToolRL", "align_calls", "parse_calls", "score_calls", "sft_to_row", "split_think", "value_match",
           "paper_calls", "paper_reward", "paper_score_calls", "paper_value_match", "PARSE_MODES"]
