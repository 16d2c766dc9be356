"""The one estimate formatter and the one table writer of every command and report.

An estimate cell is written in one way everywhere: ``0.512±0.010`` (mean ± standard error over
problems) and, for a seed group, ``0.512±0.010 s±0.004`` (the between-seed standard error after
``s±``), with "-" where the metric is undefined. Each output format renders the same cells its own
way: the terminal packs ``±`` tight so columns stay narrow, Markdown and LaTeX spread it
(`` ± `` / `` $\\pm$ ``), CSV gives the numbers their own columns (``NAME``, ``NAME_se``,
``NAME_seed_se``) so a spreadsheet reads them without parsing.

:func:`write_table` takes a header and rows of cells, each a string, a number, an
:class:`~vpo_harness.harness.core.metrics.Estimate` or a :class:`Cell` (an estimate or text with bold, sign and
a trailing note such as a confidence interval), and writes ``text``, ``markdown``, ``latex``,
or ``csv``.
"""
from __future__ import annotations

import csv
import html as _html
import io
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from vpo_harness.harness.core.metrics import Estimate

FORMATS = ("text", "markdown", "latex", "csv")
#: what :func:`format_estimate` also writes: HTML, the standard errors in a ``<span class='se'>`` the
#: report sets smaller (its tables are sortable, so ``reports.report`` lays them out itself)
CELL_FORMATS = (*FORMATS, "html")
#: how each format writes "plus or minus"
_PM = {"text": "±", "html": "±", "markdown": " ± ", "latex": "\x00", "csv": "±"}
_LATEX_PM = " $\\pm$ "  # the LaTeX writer puts it in after escaping the cell (\x00 above stands for it)
#: the legend line of a table holding seed-group cells
SEED_LEGEND = "s±: standard error between seeds (runs that differ only in their sampling seed)"
#: the legend line of a table of training-seed groups (`vpo demo --seeds`)
TRAINING_SEED_LEGEND = ("±: standard error treating each training run as one draw (training seed x problem "
                        "random effects); s±: standard error between training seeds (one policy per seed, same "
                        "sampling settings)")


def legend_for(axes: "Sequence[str]") -> str:
    """The seed legend of a table holding groups along ``axes`` (each "sampling" or "training", as
    ``harness.core.seed_groups`` names them): the training one when a training-seed group is among them."""
    return TRAINING_SEED_LEGEND if "training" in axes else SEED_LEGEND


def format_number(x: float | None, nd: int = 3, sign: bool = False) -> str:
    """``x`` to ``nd`` decimals ("-" when undefined); rounding noise is 0, never ``-0.000``."""
    if x is None or x != x:
        return "-"
    if abs(x) < 0.5 * 10.0 ** -nd:
        x = 0.0
    return f"{x:+.{nd}f}" if sign else f"{x:.{nd}f}"


def as_estimate(e: Estimate | Mapping[str, Any] | None) -> Estimate | None:
    """An :class:`Estimate` from itself or its JSON form (``{"mean", "stderr", "n", ...}``)."""
    if e is None or isinstance(e, Estimate):
        return e
    return Estimate.from_dict(dict(e))


def format_estimate(e: Estimate | Mapping[str, Any] | None, nd: int = 3, sign: bool = False,
                    fmt: str = "text") -> str:
    """The one way an estimate is written: mean ± standard error, then ``s±`` the between-seed
    standard error when it aggregates several seeds; "-" when undefined."""
    est = as_estimate(e)
    if est is None or not est.defined:
        return "-"
    if fmt not in CELL_FORMATS:
        raise ValueError(f"estimate format {fmt!r}: expected one of {', '.join(CELL_FORMATS)}")
    pm = _PM[fmt]
    err = ""
    if est.stderr == est.stderr:
        err += pm + format_number(est.stderr, nd)
    if est.n_seeds > 1 and est.seed_stderr is not None and est.seed_stderr == est.seed_stderr:
        err += " s" + pm.lstrip() + format_number(est.seed_stderr, nd)
    if fmt == "html":
        return format_number(est.mean, nd, sign) + (f"<span class='se'>{_html.escape(err)}</span>" if err else "")
    return format_number(est.mean, nd, sign) + err


@dataclass(frozen=True)
class Cell:
    """A table cell with emphasis: ``value`` (text, number or estimate), ``bold``, ``sign`` (signed
    estimate: a difference) and ``note``, text written after it (``" [+0.01, +0.09]"``)."""

    value: Any
    bold: bool = False
    sign: bool = False
    note: str = ""


def _parts(cell: Any) -> Cell:
    return cell if isinstance(cell, Cell) else Cell(cell)


def _is_estimate(value: Any) -> bool:
    return isinstance(value, Estimate)


def _text(cell: Any, fmt: str, nd: int) -> str:
    c = _parts(cell)
    v = c.value
    if _is_estimate(v):
        body = format_estimate(v, nd, c.sign, fmt)
    elif isinstance(v, float):
        body = format_number(v, nd, c.sign)
    else:
        body = "" if v is None else str(v)
    return body + (c.note if body != "-" else "")


_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                  "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def latex_escape(text: str) -> str:
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in str(text))


def write_table(head: Sequence[str], rows: Sequence[Sequence[Any]], fmt: str = "text", *, nd: int = 3,
                align: str | None = None, notes: Sequence[str] = (), seed_legend: str = SEED_LEGEND) -> str:
    """``rows`` under ``head`` in ``fmt`` (one of :data:`FORMATS`).

    ``align``: one letter per column, ``l`` or ``r`` (default: the first column left, the rest
    right) for Markdown and LaTeX; the terminal aligns every column left. ``notes``: lines
    printed under the table (LaTeX: as ``%`` comments above it; CSV: none, the file holds data
    only); a table with a seed-group cell gets ``seed_legend`` added (:data:`SEED_LEGEND`, or
    :data:`TRAINING_SEED_LEGEND` for training-seed groups)."""
    if fmt not in FORMATS:
        raise ValueError(f"table format {fmt!r}: expected one of {', '.join(FORMATS)}")
    ncol = len(head)
    if any(len(r) != ncol for r in rows):
        bad = next(i for i, r in enumerate(rows) if len(r) != ncol)
        raise ValueError(f"table row {bad} has {len(rows[bad])} cells for {ncol} columns")
    align = align or ("l" + "r" * (ncol - 1))
    seeded = any(_is_estimate(_parts(c).value) and _parts(c).value.n_seeds > 1 for r in rows for c in r)
    notes = list(notes) + ([seed_legend] if seeded and fmt != "csv" else [])
    if fmt == "csv":
        return _csv(head, rows, nd)
    cells = [[_text(c, fmt, nd) for c in r] for r in rows]
    bold = [[_parts(c).bold for c in r] for r in rows]
    if fmt == "text":
        widths = [max(len(x) for x in col) for col in zip(head, *cells)]
        line = "  ".join(f"{{:<{w}}}" for w in widths)
        return "\n".join([line.format(*head)] + [line.format(*r) for r in cells] + notes)
    if fmt == "markdown":
        def md(t: str, b: bool) -> str:
            t = t.replace("|", "\\|")
            return f"**{t}**" if b and t not in ("", "-") else t
        out = ["| " + " | ".join(h.replace("|", "\\|") for h in head) + " |",
               "|" + "|".join(":---" if a == "l" else "---:" for a in align) + "|"]
        out += ["| " + " | ".join(md(t, b) for t, b in zip(r, br)) + " |" for r, br in zip(cells, bold)]
        return "\n".join(out + ([""] + notes if notes else []))
    if fmt == "latex":
        def tex(t: str, b: bool) -> str:
            body = latex_escape(t).replace(_PM["latex"], _LATEX_PM)
            return f"\\textbf{{{body}}}" if b and t not in ("", "-") else body
        out = [f"% {n}" for n in notes] + [f"\\begin{{tabular}}{{{align}}}", "\\toprule",
                                            " & ".join(latex_escape(h) for h in head) + " \\\\", "\\midrule"]
        out += [" & ".join(tex(t, b) for t, b in zip(r, br)) + " \\\\" for r, br in zip(cells, bold)]
        return "\n".join(out + ["\\bottomrule", "\\end{tabular}"])
    raise AssertionError(fmt)  # every format returned above


def _csv(head: Sequence[str], rows: Sequence[Sequence[Any]], nd: int) -> str:
    """Estimates as numbers in columns of their own: NAME (mean), NAME_se and, when a cell of the
    column aggregates seeds, NAME_seed_se; other cells as written, floats unrounded."""
    cols = list(zip(*rows)) if rows else [() for _ in head]
    est_col = [any(_is_estimate(_parts(c).value) for c in col) for col in cols]
    seed_col = [any(_is_estimate(_parts(c).value) and _parts(c).value.n_seeds > 1 for c in col) for col in cols]
    header: list[str] = []
    for h, e, s in zip(head, est_col, seed_col):
        header += [h] + ([f"{h}_se"] if e else []) + ([f"{h}_seed_se"] if s else [])
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    for r in rows:
        out: list[Any] = []
        for c, e, s in zip(r, est_col, seed_col):
            v = _parts(c).value
            if _is_estimate(v):
                out += [_num(v.mean), _num(v.stderr)] + ([_num(v.seed_stderr)] if s else [])
            else:
                out += [_num(v) if isinstance(v, float) else ("" if v is None else v)]
                out += [""] * (int(e) + int(s))
        w.writerow(out)
    return buf.getvalue()


def _num(x: float | None) -> Any:
    return "" if x is None or x != x else x
