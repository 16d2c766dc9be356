"""One parser for training flags: a config dataclass's fields are its command line.

Each trainer keeps its settings in one dataclass (``SFTConfig``, ``RLConfig``, ``TRLVPOConfig``,
the verl export and launch); its flags, their types and their defaults are read from that dataclass
here, so a field added or a default changed there reaches ``python -m vpo_harness.training.rl`` and
``vpo train`` without a second copy to keep in step. Why not hand-written ``add_argument`` lines: they
drifted (``vpo train --threads`` said 1 where the trainer said 2) and each parsed booleans its own way
(``--augment ture`` was False, no error).

A field's type decides its flag: ``bool`` takes ``true``/``false`` (``--sobol`` alone is true; any
other word is refused with one line), ``int``/``float``/``str`` as usual, ``X | None`` as ``X``,
``dict`` as ``k=v,...`` (the project's one ``k=v`` parser), ``list[X]``/``tuple[X, ...]`` as comma
separated ``X``. A type with no command-line form is an error when the parser is built, not a flag
that silently takes text. A field's help is its comment in the dataclass.
"""
from __future__ import annotations

import argparse
import inspect
import re
import types
import typing
from dataclasses import MISSING, dataclass, fields
from typing import Any, Callable, Iterable, NoReturn

TRUE_WORDS = ("true", "1", "yes", "on")
FALSE_WORDS = ("false", "0", "no", "off")


def parse_bool(text: str) -> bool:
    """``true``/``false`` (and 1/0, yes/no, on/off), any case; anything else is an argparse error."""
    word = text.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def _items(of: Callable[[str], Any]) -> Callable[[str], list[Any]]:
    def parse(text: str) -> list[Any]:
        try:
            return [of(x.strip()) for x in text.split(",") if x.strip()]
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected comma-separated {of.__name__} values, got {text!r}") from None
    parse.__name__ = f"{of.__name__} list"
    return parse


_SCALARS: dict[Any, Callable[[str], Any]] = {int: int, float: float, str: str}


def converter(hint: Any, where: str) -> Callable[[str], Any]:
    """The argparse ``type=`` for a field's type hint (``Optional`` unwrapped); ``where`` names the
    field in the error for a type with no command-line form."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        rest = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(rest) == 1:
            return converter(rest[0], where)
    if hint is bool:
        return parse_bool
    if hint in _SCALARS:
        return _SCALARS[hint]
    if hint is dict or origin is dict:
        from vpo_harness.harness.core.models import kv_arg  # the one k=v,... parser of every command

        return kv_arg
    if origin in (list, tuple):
        args = [a for a in typing.get_args(hint) if a is not Ellipsis]
        if len(set(args)) == 1 and args[0] in _SCALARS:
            return _items(_SCALARS[args[0]])
    raise TypeError(f"{where}: no command-line form for the type {hint!r} (add one to training/flags.py)")


def field_docs(cls: type) -> dict[str, str]:
    """Each field's comment in the class body: its trailing ``# ...`` or the ``#: ...`` lines above it."""
    try:
        lines = inspect.getsource(cls).splitlines()
    except (OSError, TypeError):
        return {}
    docs: dict[str, str] = {}
    above: list[str] = []
    for line in lines:
        s = line.strip()
        if s.startswith("#:"):
            above.append(s[2:].strip())
            continue
        m = re.match(r"(\w+)\s*:[^=#]*(?:=[^#]*)?(?:#\s*(.*))?$", s)
        if m and not s.startswith(("def ", "class ", "@", "return ")):
            text = " ".join(above + ([m.group(2).strip()] if m.group(2) else []))
            docs[m.group(1)] = text[:-1] if text.endswith(".") and not text.endswith("..") else text
        above = []
    return docs


def field_default(f: Any) -> Any:
    if f.default is not MISSING:
        return f.default
    if f.default_factory is not MISSING:
        return f.default_factory()
    return MISSING


@dataclass(frozen=True)
class FieldFlag:
    """One dataclass field as one flag: ``--<dest with dashes>`` fills ``config.field``."""

    owner: str                       # the dataclass's name (for help and errors)
    field: str
    dest: str
    convert: Callable[[str], Any]
    default: Any
    doc: str

    @property
    def flag(self) -> str:
        return "--" + self.dest.replace("_", "-")

    @property
    def is_bool(self) -> bool:
        return self.convert is parse_bool


def field_flags(cls: type, *, rename: dict[str, str] | None = None, prefix: str = "",
                unprefixed: Iterable[str] = (), skip: Iterable[str] = ()) -> list[FieldFlag]:
    """The flags of ``cls``'s fields: ``dest`` is ``rename[field]``, else ``prefix + field`` (a field in
    ``unprefixed`` keeps its own name); fields in ``skip`` are set by the caller, not by a flag."""
    rename, keep, drop = rename or {}, set(unprefixed), set(skip)
    hints = typing.get_type_hints(cls)
    docs = field_docs(cls)
    out = []
    for f in fields(cls):
        if f.name in drop or not f.init:
            continue
        dest = rename.get(f.name) or (f.name if f.name in keep else prefix + f.name)
        out.append(FieldFlag(cls.__name__, f.name, dest, converter(hints[f.name], f"{cls.__name__}.{f.name}"),
                             field_default(f), docs.get(f.name, "")))
    return out


def add_flag(p: argparse.ArgumentParser | Any, dest: str, convert: Callable[[str], Any], default: Any,
             help: str) -> None:
    """One flag; a boolean one also stands alone (``--sobol`` is ``--sobol true``)."""
    flag = "--" + dest.replace("_", "-")
    kw: dict[str, Any] = {"nargs": "?", "const": True, "metavar": "true|false"} if convert is parse_bool else {}
    p.add_argument(flag, dest=dest, type=convert, default=default, help=help.replace("%", "%%"), **kw)


def add_config_arguments(p: argparse.ArgumentParser, cls: type, **how: Any) -> list[FieldFlag]:
    """A trainer's own command line: every field a flag, with the dataclass's default."""
    flags = field_flags(cls, **how)
    for f in flags:
        add_flag(p, f.dest, f.convert, f.default, f.doc or " ")
    return flags


def config_from_args(cls: type, ns: argparse.Namespace, flags: Iterable[FieldFlag] | None = None,
                     **set_by_caller: Any) -> Any:
    """``cls`` from parsed flags: a flag left unset (None) keeps the dataclass's default."""
    flags = field_flags(cls) if flags is None else flags
    given = {f.field: getattr(ns, f.dest) for f in flags if getattr(ns, f.dest, None) is not None}
    return cls(**{**given, **set_by_caller})


class OneLineParser(argparse.ArgumentParser):
    """A bad flag or value is one line on stderr (exit 2), not the usage of fifty flags above it."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} ({self.prog} --help lists the flags)\n")


def main_parser(cls: type, doc: str | None) -> tuple[argparse.ArgumentParser, list[FieldFlag]]:
    """The parser of ``python -m vpo_harness.training.<trainer>``: the module's docstring, one flag per field."""
    p = OneLineParser(description=doc, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    return p, add_config_arguments(p, cls)
