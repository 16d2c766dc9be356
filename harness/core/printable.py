"""Text from outside (a server's error body, a header, an OS message) made safe for a terminal line.

Why: a hostile or broken server's reply reaches stderr through error messages and retry lines; an
escape sequence in it could rewrite the terminal (move the cursor, change the title, hide the line
that says what failed), and a newline could forge a line of the harness's own output. One helper, so
that every path that prints such text escapes it the same way.
"""
from __future__ import annotations


def printable(text: str) -> str:
    """``text`` with every control character (C0, DEL, C1; newlines and tabs included) written as
    a Python escape (``\\x1b``, ``\\n``); all else, non-ASCII letters included, is kept."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)
