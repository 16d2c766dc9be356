"""MuSiQue-Ans multi-hop QA (d = 5): cite the supporting paragraph of every hop, then answer.

r = [hop_1, hop_2, hop_3, hop_4, answer_f1] (benchmarks.md):
- hop_i = 1 when the gold supporting paragraph of reasoning step i is among the cited indices. Only the
  first 4 *distinct* cited indices count, so citing every paragraph cannot earn all hops.
- Hops beyond the question's hop count are 1 (a 2-hop question can still reach r = 1).
- answer_f1 = SQuAD token F1, best over the answer and its aliases.
- No ``<answer>`` -> the zero vector (no hop credit for a cite-only reply, which would otherwise reward
  a never-answer policy).
Task scalar = (sum of hops + 3 * answer_f1) / 7: the answer weighs as much as three hops.

Parsing, option ``parse``:
- ``paper`` (default; the VPO authors' scorer ``vpo_tasks/musique.py``, which produced the paper's
  numbers and ``shared/data/musique/authors_scores.jsonl``): the *first* ``<support>`` and the *first*
  ``<answer>`` (tags case-sensitive, reasoning not removed: a draft inside ``<think>`` counts); cited
  indices are the comma-separated items that are all digits ("3, 7"; "[3] [7]", "3 and 7" or "3 7"
  cite nothing); an empty or missing answer gives the zero vector (no hop credit); answer F1 normalises
  lower -> articles -> punctuation (so "the-Stanley" matches "Stanley"). Chains: the first
  ``<response_i>`` of each i (case-sensitive).
- ``lenient`` (benchmarks.md's wording, this project's earlier reading): a closed ``<think>`` block is
  dropped first, then the *last* ``<support>`` / ``<answer>`` win; every run of digits in ``<support>``
  is a citation; an empty ``<answer></answer>`` still earns hop credit; SQuAD's normalisation order
  (punctuation before articles).

The paper's 300 questions (option ``hop_stratified``), option ``selection``:
- ``authors`` (default): the procedure of the authors' reproduction notes (``ryanboldi/vpo``
  ``PAPER_REPRO.md`` section 3.2, "Eval split"): for h = 2, 3, 4 in turn, the h-hop questions in source
  order, shuffled with seed 42 (``datasets.Dataset.shuffle``, i.e. ``numpy.random.default_rng(42)
  .permutation``), the first 100 kept (all, when fewer); the three parts concatenated and shuffled once
  more with seed 42. On the official dev split (the hub's ``validation``, in its own order) these are
  the authors' 300 questions, in their order.
- ``sample``: this project's earlier selection (``random.Random(seed).sample`` per hop group, source
  order kept), kept so runs made with it can be re-opened and resumed (with ``seed=0``, its old default).
"""
from __future__ import annotations

import random
import re
import warnings
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from vpo_harness.benchmarks.base import Benchmark, Messages, Option, Problem, extract_tag, user
from vpo_harness.benchmarks.tags import first_block
from vpo_harness.benchmarks.rowfiles import Row, check_unique_ids, hub_rows, iter_dicts, looks_like_hub_id, need, need_str_list, read_rows
from vpo_harness.benchmarks.textnorm import authors_token_f1, best_token_f1, strip_think
from vpo_harness.harness.core.paths import shared_data_dir

HUB_ID = "dgslibisey/MuSiQue"
LOCAL_FILE = "musique/musique_ans_v1.0_dev.sample.jsonl"
MAX_HOPS = 4
#: our split name -> hub split; the paper evaluates on the official dev (= hub "validation") split
_HUB_SPLIT = {"train": "train", "validation": "validation", "test": "validation"}
_DIGITS = re.compile(r"\d+")
#: the hop counts of the paper's stratified split and the authors' shuffle seed (``PAPER_REPRO.md`` 3.2)
STRATA = (2, 3, 4)
AUTHORS_SEED = 42
SELECTIONS = ("authors", "sample")



PARSE_MODES = ("paper", "lenient")


def paper_cited(support: str | None) -> list[int]:
    """The authors' citation reading: comma-separated items that are all digits, in order (duplicates
    kept here; :func:`hop_scores` callers cap to the first MAX_HOPS distinct ones)."""
    out: list[int] = []
    for tok in (support or "").split(","):
        tok = tok.strip()
        if tok.isdigit():
            try:
                out.append(int(tok))
            except ValueError:      # a digit character int() does not read (e.g. superscripts)
                continue
    return out


def first_distinct(cited: list[int], k: int = MAX_HOPS) -> list[int]:
    out: list[int] = []
    for i in cited:
        if i not in out:
            out.append(i)
            if len(out) == k:
                break
    return out


def paper_reward(text: str, support: list[int], golds: list[str]) -> np.ndarray:
    """[hop_1..hop_4, answer_f1] of one reply as the authors' ``score_one`` computes it."""
    ans = first_block(text, "answer", ignore_case=False)
    pred = ans.strip() if ans is not None else ""
    if not pred:
        return np.zeros(MAX_HOPS + 1)
    sup = first_block(text, "support", ignore_case=False)
    hops = hop_scores(first_distinct(paper_cited(sup)), support)
    f1 = max(authors_token_f1(pred, g, strip_articles=True) for g in golds)
    return np.array(hops + [f1], dtype=float)


def cited_indices(support: str | None) -> list[int]:
    """Lenient reading: distinct cited paragraph indices (every run of digits) in citation order,
    capped at the first MAX_HOPS."""
    out: list[int] = []
    if not support:
        return out
    for tok in _DIGITS.findall(support):
        if len(tok) > 9:  # not a paragraph index; also keeps int() away from huge digit strings
            continue
        i = int(tok)
        if i not in out:
            out.append(i)
            if len(out) == MAX_HOPS:
                break
    return out


def hop_scores(cited: list[int], support: list[int]) -> list[float]:
    """hop_1..hop_4: gold paragraph of step i cited? Steps the question does not have score 1."""
    chosen = set(cited[:MAX_HOPS])
    return [1.0 if i >= len(support) else float(support[i] in chosen) for i in range(MAX_HOPS)]


def format_answer(support: list[int], answer: str) -> str:
    """An answer in the task's format (used by tests and as the example in prompts)."""
    return f"<support>{', '.join(str(i) for i in support)}</support>\n<answer>{answer}</answer>"


class MuSiQue(Benchmark):
    """Options: ``hop_stratified`` (bool, default False; the paper's 100 x {2,3,4}-hop split),
    ``per_hop`` (100), ``selection`` (``authors`` or ``sample``, see the module doc), ``seed`` (42, for
    the stratified selection), ``answerable_only`` (True),
    ``hub`` (False: load from the hub even when local data exists), ``parse`` (``paper`` default, or
    ``lenient``: see the module docstring)."""

    name: ClassVar[str] = "musique"
    component_names: ClassVar[tuple[str, ...]] = ("hop_1", "hop_2", "hop_3", "hop_4", "answer_f1")
    splits: ClassVar[dict[str, int | None]] = {"train": None, "validation": None, "test": None}
    answer_tag: ClassVar[str] = "response"
    default_temperature: ClassVar[float] = 0.7
    default_top_p: ClassVar[float] = 1.0

    options_spec: ClassVar[dict[str, Option]] = {
        "hop_stratified": Option(False, "the paper's 100 x {2,3,4}-hop split"),
        "per_hop": Option(100, "questions per hop count when hop_stratified"),
        "selection": Option("authors", "how hop_stratified picks: the authors' seeded shuffles, or the "
                                       "earlier per-hop random.sample", SELECTIONS),
        "seed": Option(AUTHORS_SEED, "seed of the stratified selection"),
        "answerable_only": Option(True, "drop unanswerable questions"),
        "hub": Option(False, "load from the hub even when local data exists"),
        "parse": Option("paper", "how answers are read: the authors' scorer or the lenient reader", PARSE_MODES),
    }

    def __init__(self, **options: Any):
        super().__init__(**options)
        self.parse_mode = self.options["parse"]
        #: what the last load selected (e.g. "took 24 of 100 3-hop questions: only 24 in the data")
        self.selection_note: str | None = None

    # ---- data -------------------------------------------------------------------------------------
    def load(self, split: str, *, path: str | None = None, limit: int | None = None) -> list[Problem]:
        self.check_split(split, _HUB_SPLIT)
        rows = self._rows(split, path)
        every = [self._problem(r) for r in rows]
        check_unique_ids(((p.id, r) for p, r in zip(every, rows)), "id")  # were merged silently
        problems = [p for p in every if p.meta["answerable"] or not self.options["answerable_only"]]
        self.selection_note = None
        if self.options["hop_stratified"]:
            problems = self._stratify(problems)
        return problems[:limit] if limit is not None else problems

    def _rows(self, split: str, path: str | None) -> list[Row]:
        how = (f"Pass path=<a MuSiQue JSONL/parquet file> (default local slice: shared data "
               f"{LOCAL_FILE}, splits validation/test).")
        if path is not None and not looks_like_hub_id(path):
            return read_rows(path)
        local = self._local_file(split)
        if path is None and local is not None:
            return read_rows(local)
        return hub_rows(path or HUB_ID, _HUB_SPLIT[split], how_to_fix=how)

    def _local_file(self, split: str) -> Path | None:
        local = shared_data_dir() / LOCAL_FILE
        return local if not self.options["hub"] and split in ("validation", "test") and local.is_file() else None

    def local_size(self, split: str) -> int | None:
        return len(self.load(split)) if self._local_file(split) is not None else None

    def _problem(self, row: Row) -> Problem:
        d = row.data
        pid = need(row, d, "id", str)
        question = need(row, d, "question", str)
        answer = need(row, d, "answer", str)
        aliases = need_str_list(row, d, "answer_aliases")
        answerable = need(row, d, "answerable", bool)
        paragraphs = []
        for i, p in iter_dicts(row, d.get("paragraphs"), "paragraphs"):
            paragraphs.append({
                "idx": need(row, p, "idx", int, field_path=f"paragraphs[{i}].idx"),
                "title": need(row, p, "title", str, field_path=f"paragraphs[{i}].title"),
                "text": need(row, p, "paragraph_text", str, field_path=f"paragraphs[{i}].paragraph_text"),
            })
        if not paragraphs:
            raise row.error("no paragraphs", "paragraphs")
        known = {p["idx"] for p in paragraphs}
        support: list[int] = []
        steps = list(iter_dicts(row, d.get("question_decomposition"), "question_decomposition"))
        if not steps:
            raise row.error("empty decomposition", "question_decomposition")
        for i, step in steps:
            name = f"question_decomposition[{i}].paragraph_support_idx"
            if not answerable and step.get("paragraph_support_idx") is None:
                continue  # MuSiQue-Full: unanswerable questions may lack support
            idx = need(row, step, "paragraph_support_idx", int, field_path=name)
            if idx not in known:
                raise row.error(f"paragraph {idx} is not among the paragraphs", name)
            support.append(idx)
        if len(steps) > MAX_HOPS:
            raise row.error(f"{len(steps)} hops; the reward has {MAX_HOPS} hop slots", "question_decomposition")
        data = {"question": question, "paragraphs": paragraphs, "support": support,
                "answer": answer, "aliases": aliases}
        return Problem(id=pid, data=data, meta={"num_hops": len(steps), "answerable": answerable})

    def _stratify(self, problems: list[Problem]) -> list[Problem]:
        """``per_hop`` questions each of 2, 3, 4 hops by the ``selection`` option (see the module doc).

        When a group is short (the local slice has 24 3-hop and 17 4-hop questions) all of it is taken,
        as the authors' ``min(PER_HOP, len(bucket))`` does, and a warning plus ``selection_note`` say so.
        """
        per_hop, seed = int(self.options["per_hop"]), int(self.options["seed"])
        groups = [[p for p in problems if p.meta["num_hops"] == hops] for hops in STRATA]
        if self.options["selection"] == "authors":
            chosen = authors_selection(groups, per_hop, seed)
        else:
            chosen = _sampled_selection(groups, per_hop, seed)
        short = [f"{len(g)} of {per_hop} {hops}-hop" for hops, g in zip(STRATA, groups) if len(g) < per_hop]
        if short:
            self.selection_note = ("hop-stratified split is short: took " + ", ".join(short) +
                                   " questions (all that the data has)")
            warnings.warn(self.selection_note, stacklevel=3)
        return chosen

    # ---- prompts ----------------------------------------------------------------------------------
    def _context(self, problem: Problem) -> str:
        paras = "\n\n".join(f"[{p['idx']}] (Title: {p['title']}) {p['text']}" for p in problem.data["paragraphs"])
        return (f"Read the paragraphs below and answer the multi-hop question.\n\nParagraphs:\n{paras}\n\n"
                f"Question: {problem.data['question']}\n\n")

    def _authors_prompt(self, problem: Problem) -> str:
        """The authors' prompt up to the output instruction (``vpo_tasks/musique.py``: paragraphs one per
        line as ``[idx] (Title: ...) text``)."""
        paras = "\n".join(f"[{p['idx']}] (Title: {p['title']}) {p['text']}" for p in problem.data["paragraphs"])
        return ("Read the paragraphs below and answer the multi-hop question. Identify which paragraphs "
                f"support your answer.\n\nParagraphs:\n{paras}\n\nQuestion: {problem.data['question']}\n\n")

    def prompt(self, problem: Problem, *, style: str = "full") -> Messages:
        """``full``: the authors' single-answer prompt, verbatim; ``compact``: a shorter instruction."""
        _check_style(style)
        if style == "full":
            return user(self._authors_prompt(problem) + "First reason about which paragraphs are relevant, then "
                        "output your supporting paragraph indices and answer.\n<support>comma-separated paragraph "
                        "indices (e.g., 3, 7, 12)</support>\n<answer>your answer</answer>")
        return user(self._context(problem) + "Answer in this format:\n<support>comma-separated paragraph "
                    "indices (e.g. 3, 7, 12)</support>\n<answer>your answer</answer>")

    def multi_prompt(self, problem: Problem, m: int, *, style: str = "full") -> Messages:
        """``full``: the authors' multi-answer rewrite (the output instruction replaced), verbatim."""
        _check_style(style)
        if style == "full":
            return user(self._authors_prompt(problem) + f"Give {m} different answers in <response_i>...</response_i> "
                        "tags, each with <support>indices</support> and <answer>answer</answer>.")
        return user(self._context(problem) +
                    f"Give {m} different answers, each in its own numbered tag <response_1>...</response_1> "
                    f"through <response_{m}>...</response_{m}>. Each response holds "
                    "<support>comma-separated paragraph indices</support> and <answer>your answer</answer>. "
                    "Make the responses genuinely different (other paragraphs or another answer), "
                    "and close every tag.")

    # ---- parsing ----------------------------------------------------------------------------------
    def parse(self, completion: str, m: int | None = None) -> list[str | None]:
        if m is None or self.parse_mode != "paper":
            return super().parse(completion, m)
        return self.authors_parse(completion, m)

    def parse_single(self, completion: str) -> str | None:
        """paper: the reply as written when its first ``<answer>`` is non-empty, else None. lenient: the
        reply minus reasoning, or None when it holds no closed ``<answer>``."""
        if not isinstance(completion, str):
            return None
        if self.parse_mode == "paper":
            found = first_block(completion, "answer", ignore_case=False)
            return completion if found is not None and found.strip() else None
        body = strip_think(completion).strip()
        return body if extract_tag(body, "answer") is not None else None

    # ---- scoring ----------------------------------------------------------------------------------
    def reward(self, problem: Problem, answer: str | None) -> np.ndarray:
        if not isinstance(answer, str):
            return np.zeros(self.d)
        if self.parse_mode == "paper":
            return paper_reward(answer, problem.data["support"], [problem.data["answer"], *problem.data["aliases"]])
        body = strip_think(answer)
        pred = extract_tag(body, "answer")
        if pred is None:
            return np.zeros(self.d)
        hops = hop_scores(cited_indices(extract_tag(body, "support")), problem.data["support"])
        f1 = best_token_f1(pred, [problem.data["answer"], *problem.data["aliases"]])
        return np.array(hops + [f1], dtype=float)

    def scalar(self, r: np.ndarray) -> np.ndarray | float:
        """(sum of hops + 3 * answer_f1) / 7 over the last axis."""
        r = np.asarray(r, dtype=float)
        return (r[..., :MAX_HOPS].sum(axis=-1) + 3.0 * r[..., MAX_HOPS]) / 7.0

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        out["scalar"] = "(hop_1 + hop_2 + hop_3 + hop_4 + 3 * answer_f1) / 7"
        if self.selection_note:
            out["selection_note"] = self.selection_note
        return out


def authors_selection(groups: list[list[Problem]], per_hop: int, seed: int = AUTHORS_SEED) -> list[Problem]:
    """The authors' stratified split, step for step (``PAPER_REPRO.md`` 3.2): each hop group (in source
    order) shuffled with ``seed`` and cut to its first ``per_hop``; the parts concatenated in hop order;
    the whole shuffled with ``seed`` again. Every shuffle is ``Dataset.shuffle(seed=seed)``, which draws
    ``numpy.random.default_rng(seed).permutation(len)`` from a fresh generator each time."""
    parts: list[Problem] = []
    for group in groups:
        order = np.random.default_rng(seed).permutation(len(group))
        parts.extend(group[i] for i in order[:per_hop])
    final = np.random.default_rng(seed).permutation(len(parts))
    return [parts[i] for i in final]


def _sampled_selection(groups: list[list[Problem]], per_hop: int, seed: int) -> list[Problem]:
    """The earlier selection (``selection=sample``): ``per_hop`` drawn with one ``random.Random(seed)``
    across the groups, source order kept inside each group."""
    rng = random.Random(seed)
    chosen: list[Problem] = []
    for group in groups:
        picked = set(range(len(group))) if len(group) < per_hop else set(rng.sample(range(len(group)), per_hop))
        chosen.extend(p for i, p in enumerate(group) if i in picked)
    return chosen


def _check_style(style: str) -> None:
    if style not in ("full", "compact"):
        raise ValueError(f"unknown prompt style {style!r}; known: 'full', 'compact'")


__all__ = ["MuSiQue", "authors_selection", "cited_indices", "format_answer", "hop_scores", "paper_cited", "paper_reward", "PARSE_MODES"]
