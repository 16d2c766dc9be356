"""Progress output for every long loop (runner, evolve, rescore, trainers): one helper, two renderings.

On a terminal it is a tqdm bar. When stderr is not a terminal (a redirected log, CI, ``nohup``) a bar's
carriage returns and escape codes would pile up as kilobytes of redraws, so the same calls print
plain lines instead: one at every tenth of the total but not within ``min_gap_s`` of the previous
line, one every ``interval_s`` while nothing else is printed, and one at the end, e.g.
``[vpo] generate: 12/24 chain (50%), 3.10 chain/s, 0:04 elapsed, ETA 0:04`` (``ETA after 5%`` until
enough is done to estimate from; tqdm's bar shows its own estimate of the time left). A job of a few seconds prints its
final line only; a long one about a dozen. Transient bars
(``leave=False``: evolve's per-problem bars) print nothing there; their totals show in the overall bar.

The plain rendering implements the part of tqdm's interface this project uses (``update``, ``n``,
``refresh``, ``set_postfix``, ``set_description``, ``close``, iteration, context manager).
"""
from __future__ import annotations

import contextlib
import math
import sys
import time
from typing import Any, Iterable, Iterator, TextIO

#: plain mode: a line at every 1/STEPS of the total
STEPS = 10
#: an ETA is printed once this share of the work (and at least ETA_MIN_UNITS) is done: before, the
#: first batch's time (a model still warming up, one long chain) made estimates like ``ETA 7:26:21``
ETA_MIN_SHARE = 0.05
ETA_MIN_UNITS = 3


def is_terminal(stream: Any) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except (ValueError, OSError):  # a closed stream
        return False


def progress(iterable: Iterable[Any] | None = None, *, total: float | None = None, desc: str = "",
             unit: str = "it", disable: bool = False, leave: bool = True, initial: float = 0,
             unit_scale: bool = False, file: TextIO | None = None, plain: bool | None = None,
             interval_s: float = 60.0, min_gap_s: float = 2.0, **tqdm_kwargs: Any) -> Any:
    """A tqdm bar on a terminal, :class:`PlainProgress` lines elsewhere (``plain`` forces either)."""
    stream = file if file is not None else sys.stderr
    if total is None and iterable is not None and hasattr(iterable, "__len__"):
        total = initial + len(iterable)  # type: ignore[arg-type]
    if plain is None:
        plain = not is_terminal(stream)
    if not plain and not disable:
        from tqdm.auto import tqdm

        return tqdm(iterable, total=total, desc=desc, unit=unit, leave=leave, initial=initial,
                    unit_scale=unit_scale, file=stream, **tqdm_kwargs)
    return PlainProgress(iterable, total=total, desc=desc, unit=unit, silent=disable or not leave,
                         initial=initial, unit_scale=unit_scale, file=stream, interval_s=interval_s,
                         min_gap_s=min_gap_s)


@contextlib.contextmanager
def step(what: str, *, file: TextIO | None = None) -> Iterator[None]:
    """Announce a slow step that shows no bar (converting or loading a model) and say how long it took:
    ``[vpo] loading X ...`` then ``[vpo] loading X: done in 4.2 s``. Why: a first model load or a GGUF
    conversion can take minutes, and a silent terminal looks hung. A failed step says so too."""
    stream = file if file is not None else sys.stderr
    print(f"[vpo] {what} ...", file=stream, flush=True)
    t0 = time.monotonic()
    ok = False
    try:
        yield
        ok = True
    finally:
        print(f"[vpo] {what}: {'done in' if ok else 'stopped after'} {time.monotonic() - t0:.1f} s", file=stream,
              flush=True)


def _scaled(x: float, scale: bool) -> str:
    if not scale:
        return f"{x:g}" if isinstance(x, float) and not x.is_integer() else str(int(x))
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= div:
            return f"{x / div:.1f}{suffix}"
    return str(int(x))


def _clock(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class PlainProgress:
    """tqdm's interface as plain, newline-terminated lines (no ``\\r``, no escape codes)."""

    def __init__(self, iterable: Iterable[Any] | None = None, *, total: float | None = None, desc: str = "",
                 unit: str = "it", silent: bool = False, initial: float = 0, unit_scale: bool = False,
                 file: TextIO | None = None, interval_s: float = 60.0, min_gap_s: float = 2.0) -> None:
        self.iterable, self.total, self.desc, self.unit = iterable, total, desc, unit
        self.silent, self.unit_scale, self.interval_s = silent, unit_scale, float(interval_s)
        self.min_gap_s = float(min_gap_s)
        self.file = file if file is not None else sys.stderr
        self.n: float = initial
        self.postfix = ""
        self._start_n = initial
        self._t0 = self._last_t = time.monotonic()
        self._last_bucket = self._bucket()
        self._printed_n: float | None = None
        self.closed = False

    # ---- tqdm's interface -----------------------------------------------------------------------
    def __iter__(self) -> Iterator[Any]:
        if self.iterable is None:
            raise TypeError("this progress has no iterable")
        try:
            for item in self.iterable:
                yield item
                self.update(1)
        finally:
            self.close()

    def __enter__(self) -> "PlainProgress":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def update(self, n: float = 1) -> None:
        self.n += n
        self._maybe_print()

    def refresh(self) -> None:
        self._maybe_print()

    def set_postfix(self, ordered_dict: dict[str, Any] | None = None, refresh: bool = True, **kwargs: Any) -> None:
        items = {**(ordered_dict or {}), **kwargs}
        self.postfix = ", ".join(f"{k}={v}" for k, v in items.items())
        if refresh:
            self._maybe_print()

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        self.postfix = str(s)
        if refresh:
            self._maybe_print()

    def set_description(self, desc: str | None = None, refresh: bool = True) -> None:
        self.desc = desc or ""

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self._printed_n != self.n and self.n != self._start_n:
            self._print()

    # ---- plain lines ----------------------------------------------------------------------------
    def _bucket(self) -> int:
        if not self.total:
            return 0
        return min(STEPS, math.floor(STEPS * self.n / self.total + 1e-9))

    def _maybe_print(self) -> None:
        if self.silent or self.closed:
            return
        bucket = self._bucket()
        now = time.monotonic()
        since = now - self._last_t
        if (bucket > self._last_bucket and since >= self.min_gap_s) or since >= self.interval_s:
            self._last_bucket = bucket
            self._print(now)

    def line(self, now: float | None = None) -> str:
        now = time.monotonic() if now is None else now
        elapsed = now - self._t0
        done = self.n - self._start_n
        head = f"[vpo] {self.desc}: " if self.desc else "[vpo] "
        if self.total:
            text = (f"{head}{_scaled(self.n, self.unit_scale)}/{_scaled(self.total, self.unit_scale)} {self.unit} "
                    f"({100 * self.n / self.total:.0f}%)")
        else:
            text = f"{head}{_scaled(self.n, self.unit_scale)} {self.unit}"
        if elapsed > 0 and done > 0:
            text += f", {_scaled(done / elapsed, self.unit_scale) if self.unit_scale else f'{done / elapsed:.2f}'} {self.unit}/s"
        text += f", {_clock(elapsed)} elapsed, {self.eta(elapsed, done)}"
        return text + (f", {self.postfix}" if self.postfix else "")

    def eta(self, elapsed: float, done: float) -> str:
        """What is left at the rate so far (``ETA 1:05``): ``done`` at the total, ``ETA ?`` while
        there is no rate or no total to count down to, or too little done to estimate from
        (:data:`ETA_MIN_SHARE`, :data:`ETA_MIN_UNITS`)."""
        if self.total and self.n >= self.total:
            return "done"
        if not self.total or elapsed <= 0 or done <= 0:
            return "ETA ?"
        if done < max(ETA_MIN_UNITS, ETA_MIN_SHARE * (self.total - self._start_n)):
            return f"ETA after {100 * ETA_MIN_SHARE:.0f}%"
        return f"ETA {_clock((self.total - self.n) * elapsed / done)}"

    def _print(self, now: float | None = None) -> None:
        if self.silent:
            return
        self._last_t = time.monotonic() if now is None else now
        self._printed_n = self.n
        try:
            print(self.line(now), file=self.file, flush=True)
        except (ValueError, OSError):  # stderr closed under us: progress is not worth a crash
            self.silent = True
