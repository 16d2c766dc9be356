"""EUREQA entity back-chaining (Li et al., NAACL 2024; d = 5): resolve masked entities A..E.

A narrative describes a chain of masked entities ("Person A", "Country B", ...); the last one (F) is
revealed, and the model must back-chain to name A..E. r = exact match per entity after normalisation
(``_`` -> space, lowercase, drop articles and punctuation, collapse spaces); entities[0] is the
question's answer. Task scalar = mean (the base class default).

Parsing, option ``parse``:
- ``paper`` (default; the VPO authors' scorer ``vpo_tasks/eureqa.py`` ``parse_response`` /
  ``normalize_entity``, which produced the paper's numbers and ``shared/data/eureqa/authors_scores.jsonl``):
  the *first* closed ``<entity_X>`` of each letter in the raw completion (tag names in any case,
  reasoning kept: a draft inside ``<think>`` counts, a later restatement does not); normalisation drops
  articles before punctuation (:func:`vpo_harness.benchmarks.textnorm.authors_entity_normalize`: "The-London" ->
  "london"). Chains: the first ``<response_i>`` of each i (case-sensitive), as ``extract_numbered_tags``.
- ``lenient`` (this project's earlier reading): closed ``<think>`` blocks dropped, then the *last* closed
  tag of each letter; SQuAD's order, punctuation before articles
  (:func:`vpo_harness.benchmarks.textnorm.entity_normalize`: "The-London" -> "thelondon"); chains: the last
  ``<response_i>`` after the reasoning is dropped.

Data: hub ``vincentleebang/EUREQA`` (splits questions_hard_1..5, questions_normal_5) or local exports of
those splits. Our splits ``train`` / ``test`` are the paper's mixed split: train = all normal_5 + the
first half (681) of hard_5 shuffled with seed 0; test = the other half (682). The shuffle is numpy's
``default_rng(seed).permutation``, the same permutation ``datasets.Dataset.shuffle(seed=...)`` uses,
so local files and the hub give identical splits. No copy of the data is reachable offline; tests use
fixtures marked synthetic.

Problem ids are ``<source split>-<idx>`` (e.g. ``questions_hard_5-17``): the mixed train split holds
rows of two hub splits whose ``idx`` ranges may overlap, so the source split keeps ids unique and stable
across train/test.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from vpo_harness.benchmarks.base import Benchmark, DataError, Messages, Option, Problem, extract_tag, user
from vpo_harness.benchmarks.rowfiles import Row, check_unique_ids, hub_rows, looks_like_hub_id, need, need_str_list, read_rows
from vpo_harness.benchmarks.textnorm import authors_entity_normalize, entity_normalize, strip_think
from vpo_harness.harness.core.paths import shared_data_dir

HUB_ID = "vincentleebang/EUREQA"
HUB_SPLITS = ("questions_hard_1", "questions_hard_2", "questions_hard_3", "questions_hard_4",
              "questions_hard_5", "questions_normal_5")
LETTERS = ("A", "B", "C", "D", "E")
#: 5 scored entities + the revealed leaf F (the paper's preprocessing requires all six)
MIN_ENTITIES = 6
_FORMATS = (".parquet", ".jsonl", ".json")
PARSE_MODES = ("paper", "lenient")
#: entity normalisation of each parse mode
NORMALIZERS = {"paper": authors_entity_normalize, "lenient": entity_normalize}


#: ``--prompt-style paper``: the VPO authors' prompt (``PROMPT_TEMPLATE`` in ``vpo_tasks/eureqa.py`` at
#: commit 767db79, one user turn), kept character for character (tests/benchmarks/test_paper_prompts.py
#: compares it with their code's output). ``{masks}`` is the list of the five masks, ``{a}``..``{e}`` each
PAPER_HEAD = (
    "You will be given a multi-hop reasoning question over a small narrative. The narrative contains masked "
    "entities (Person A, Country B, etc.) connected by relations. The leaf entity is revealed in the final "
    "sentence; you must back-chain to identify the rest.\n\nNarrative:\n{narrative}\n\nThe masked entities you "
    "must resolve (in order of introduction in the narrative):\n{masks}\n\nFor each masked entity above, output "
    "its underlying canonical name. Use underscored Wikipedia-style names exactly as they appear in the source "
    "(e.g. `Robert_Rodriguez`, `32nd_European_Film_Awards`, `From_Dusk_till_Dawn:_The_Series`).\n\n")
#: the single-answer output block that ends the authors' prompt
PAPER_SINGLE_ASK = (
    "Replace each `...` below with the resolved entity (NOTHING else inside the tags \u2014 just the canonical "
    "name):\n<entity_A>...</entity_A>   (resolves {a})\n<entity_B>...</entity_B>   (resolves {b})\n"
    "<entity_C>...</entity_C>   (resolves {c})\n<entity_D>...</entity_D>   (resolves {d})\n"
    "<entity_E>...</entity_E>   (resolves {e})\n\nThe answer to the question is whatever you put in <entity_A>.")
#: what the authors' multi-answer rewrite puts in place of that block for m answers
PAPER_MULTI_ASK = (
    "Provide {m} different reasoning chains, each wrapped in numbered tags <response_1>...</response_1> through "
    "<response_{m}>...</response_{m}>. Each chain must contain all 5 entity resolutions; replace each `...` with "
    "ONLY the resolved canonical name (underscored Wikipedia-style, no prose, no labels):\n  <response_i>\n"
    "    <entity_A>...</entity_A>   (resolves Person A \u2014 this is the answer)\n"
    "    <entity_B>...</entity_B>   (resolves the second mask)\n"
    "    <entity_C>...</entity_C>   (resolves the third mask)\n"
    "    <entity_D>...</entity_D>   (resolves the fourth mask)\n"
    "    <entity_E>...</entity_E>   (resolves the fifth mask)\n  </response_i>\n"
    "Closing tags are required for every response and every entity. The {m} chains should be genuinely "
    "different attempts (e.g. different candidate resolutions, not paraphrases). The answer to the question "
    "is whatever you put in <entity_A> within each chain.")
PROMPT_STYLES = ("full", "compact", "paper")


def paper_prompt(data: dict[str, Any], m: int) -> str:
    """The authors' prompt for a problem's data (narrative, five masks) and m answers."""
    masks = data["masks"]
    head = PAPER_HEAD.format(narrative=data["narrative"], masks="\n".join(f"  - {mk}" for mk in masks))
    if m > 1:
        return head + PAPER_MULTI_ASK.format(m=m)
    return head + PAPER_SINGLE_ASK.format(**dict(zip("abcde", masks)))


def format_answer(entities: list[str]) -> str:
    """Entities A..E in the answer format (used by tests and the prompt)."""
    return "\n".join(f"<entity_{ltr}>{e}</entity_{ltr}>" for ltr, e in zip(LETTERS, entities))


def parse_entities(text: str | None, mode: str = "paper") -> list[str | None]:
    """Stripped contents of ``<entity_A>`` .. ``<entity_E>``, None when a letter has no closed tag.

    ``paper``: the first closed tag of each letter in the text as written; ``lenient``: the last one
    after closed ``<think>`` blocks are dropped (see the module doc)."""
    if mode not in PARSE_MODES:
        raise ValueError(f"unknown EUREQA parse mode {mode!r}; known: {', '.join(PARSE_MODES)}")
    if not isinstance(text, str):
        return [None] * len(LETTERS)
    if mode == "paper":
        return [extract_tag(text, f"entity_{ltr}", which="first") for ltr in LETTERS]
    body = strip_think(text)
    return [extract_tag(body, f"entity_{ltr}") for ltr in LETTERS]


class Eureqa(Benchmark):
    """Options: ``seed`` (0, mixed-split shuffle), ``hub`` (False: use the hub even if local files exist),
    ``parse`` (``paper`` default, or ``lenient``: see the module doc)."""

    name: ClassVar[str] = "eureqa"
    component_names: ClassVar[tuple[str, ...]] = tuple(f"entity_{ltr}" for ltr in LETTERS)
    splits: ClassVar[dict[str, int | None]] = {"train": 1109, "test": 682, **{s: None for s in HUB_SPLITS}}
    answer_tag: ClassVar[str] = "response"
    default_temperature: ClassVar[float] = 0.7
    default_top_p: ClassVar[float] = 0.95

    options_spec: ClassVar[dict[str, Option]] = {
        "seed": Option(0, "shuffle seed of the mixed split"),
        "hub": Option(False, "load from the hub even when local files exist"),
        "parse": Option("paper", "how answers are read: the authors' scorer or the lenient reader", PARSE_MODES),
    }

    def __init__(self, **options: Any):
        super().__init__(**options)
        self.parse_mode = self.options["parse"]
        self.normalize = NORMALIZERS[self.parse_mode]

    # ---- data -------------------------------------------------------------------------------------
    def load(self, split: str, *, path: str | None = None, limit: int | None = None) -> list[Problem]:
        self.check_split(split)
        if path is not None and Path(path).is_file():
            # one exported file: its rows are the split as given (no mixing possible)
            tagged = [(split, r) for r in read_rows(path)]
        else:
            tagged = self._split_rows(split, self._source(path))
        problems = [self._problem(src, r) for src, r in tagged]
        check_unique_ids(((p.id, r) for p, (_, r) in zip(problems, tagged)), "idx")
        return problems[:limit] if limit is not None else problems

    def _source(self, path: str | None) -> Any:
        """A function hub split name -> rows, reading a local folder or the hub."""
        how = ("EUREQA has no offline copy here. Export the hub splits (questions_hard_1..5, "
               "questions_normal_5) as <split>.parquet/.jsonl into a folder and pass it as --data-path "
               "(path= in Python; or put them in <shared data>/eureqa/), pass one file as --data-path to load "
               "it as the split, or use --task-args hub=true with network access.")
        if path is not None and looks_like_hub_id(path):
            return lambda s: hub_rows(path, s, how_to_fix=how)
        if path is not None:
            folder = Path(path)
            if not folder.is_dir():
                raise DataError(f"no such file or folder. {how}", path=str(folder))
            return lambda s: read_rows(_find_split_file(folder, s, how))
        if self.options["hub"]:
            return lambda s: hub_rows(HUB_ID, s, how_to_fix=how)
        local = shared_data_dir() / "eureqa"
        if local.is_dir() and any(_candidates(local, s) for s in HUB_SPLITS):
            return lambda s: read_rows(_find_split_file(local, s, how))
        raise DataError(f"no local EUREQA data (and hub=false). {how}", path=str(local))

    def local_size(self, split: str) -> int | None:
        if self.options["hub"]:
            return None
        try:
            return len(self.load(split))
        except DataError:  # no local export
            return None

    def _split_rows(self, split: str, source: Any) -> list[tuple[str, Row]]:
        if split in HUB_SPLITS:
            return [(split, r) for r in source(split)]
        hard = source("questions_hard_5")
        order = np.random.default_rng(int(self.options["seed"])).permutation(len(hard))
        half = len(hard) // 2
        if split == "test":
            return [("questions_hard_5", hard[i]) for i in order[half:]]
        normal = [("questions_normal_5", r) for r in source("questions_normal_5")]
        return normal + [("questions_hard_5", hard[i]) for i in order[:half]]

    def _problem(self, source: str, row: Row) -> Problem:
        d = row.data
        question = need_str_list(row, d, "question", min_len=1)
        masks = need_str_list(row, d, "entity_masks", min_len=MIN_ENTITIES)
        entities = need_str_list(row, d, "entities", min_len=MIN_ENTITIES)
        idx = need(row, d, "idx", int)
        for i, e in enumerate(entities[:len(LETTERS)]):
            if not self.normalize(e):
                raise row.error("entity is empty after normalisation", f"entities[{i}]")
        data = {"narrative": "\n".join(question), "masks": masks[:len(LETTERS)],
                "entities": entities[:len(LETTERS)]}
        return Problem(id=f"{source}-{idx}", data=data, meta={"source_split": source, "idx": idx})

    # ---- prompts ----------------------------------------------------------------------------------
    def _intro(self, problem: Problem, style: str) -> str:
        if style not in PROMPT_STYLES:
            raise ValueError(f"unknown prompt style {style!r}; known: {', '.join(PROMPT_STYLES)}")
        masks = problem.data["masks"]
        text = ""
        if style == "full":
            text += ("You will be given a short narrative about masked entities (Person A, Country B, ...) "
                     "linked by relations. The last entity is revealed in the final sentence; back-chain "
                     "from it to identify the others.\n\n")
        text += f"Narrative:\n{problem.data['narrative']}\n\nResolve these masked entities:\n"
        text += "\n".join(f"- entity_{ltr}: {mk}" for ltr, mk in zip(LETTERS, masks)) + "\n\n"
        if style == "full":
            text += ("Name each entity by its Wikipedia title (underscores or spaces both fine, e.g. "
                     "Robert_Rodriguez). Put only the name inside each tag. The answer to the question "
                     "is entity_A.\n")
        return text

    def prompt(self, problem: Problem, *, style: str = "full") -> Messages:
        if style == "paper":
            return user(paper_prompt(problem.data, 1))
        text = self._intro(problem, style)
        text += "Answer in this format:\n" + format_answer(["..."] * len(LETTERS))
        return user(text)

    def multi_prompt(self, problem: Problem, m: int, *, style: str = "full") -> Messages:
        if style == "paper":
            return user(paper_prompt(problem.data, m))
        text = self._intro(problem, style)
        inner = "\n".join("  " + line for line in format_answer(["..."] * len(LETTERS)).split("\n"))
        text += (f"Give {m} different resolutions of the chain, each in its own numbered tag "
                 f"<response_1>...</response_1> through <response_{m}>...</response_{m}>, each holding all "
                 f"five entity tags:\n<response_i>\n{inner}\n</response_i>\n"
                 "Make them genuinely different candidate resolutions, and close every tag.")
        return user(text)

    # ---- parsing and scoring ----------------------------------------------------------------------
    def parse(self, completion: str, m: int | None = None) -> list[str | None]:
        if m is None or self.parse_mode != "paper":
            return super().parse(completion, m)
        return self.authors_parse(completion, m)

    def parse_single(self, completion: str) -> str | None:
        """paper: the reply as written when some entity tag holds text (the authors score a reply with
        no resolved entity as the zero vector); lenient: the reply minus reasoning, or None when no
        entity tag closed."""
        if not isinstance(completion, str):
            return None
        found = parse_entities(completion, self.parse_mode)
        if self.parse_mode == "paper":
            return completion if any(found) else None
        if all(e is None for e in found):
            return None
        return strip_think(completion).strip()

    def reward(self, problem: Problem, answer: str | None) -> np.ndarray:
        preds = parse_entities(answer, self.parse_mode)
        out = []
        for pred, gold in zip(preds, problem.data["entities"]):
            p = self.normalize(pred) if pred is not None else ""
            out.append(float(bool(p) and p == self.normalize(gold)))
        return np.array(out, dtype=float)


def _candidates(folder: Path, split: str) -> list[Path]:
    found = []
    for ext in _FORMATS:
        found += sorted(folder.rglob(f"{split}{ext}"))
        found += sorted(folder.rglob(f"{split}-*{ext}"))  # hub export layout: data/<split>-00000-of-00001.parquet
    return found


def _find_split_file(folder: Path, split: str, how: str) -> Path:
    found = _candidates(folder, split)
    if not found:
        raise DataError(f"no file for split {split!r} (looked for {split}.parquet/.jsonl/.json). {how}",
                        path=str(folder))
    if len(found) > 1:
        raise DataError(f"several files for split {split!r}: {[str(p) for p in found]}", path=str(folder))
    return found[0]


__all__ = ["Eureqa", "PARSE_MODES", "format_answer", "parse_entities"]
