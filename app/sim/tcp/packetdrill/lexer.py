"""The tokens of a packetdrill script (packetdrill's ``lexer.l``, as far as the kernel's
selftests use it): numbers, words, punctuation, ``...``, strings, ```` `shell` ````,
``%{ python }%`` blocks, ``--option=value`` lines and comments (``//`` and ``/* */``). A
newline is a token only outside brackets, so a syscall may span lines."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from app.sim.core.i18n import Message, msg

TokKind = Literal[
    "num", "word", "punct", "ellipsis", "string", "shell", "python", "option", "comment", "nl"
]


@dataclass(frozen=True, slots=True)
class Token:
    kind: TokKind
    text: str
    line: int
    col: int
    space: bool  # whitespace (or a line start) right before it


class ScriptSyntaxError(ValueError):
    """A script packetdrill would refuse: where (1-based line and column) and why."""

    def __init__(self, line: int, col: int, why: Message) -> None:
        self.line = line
        self.col = col
        self.why = why
        super().__init__(f"line {line}, column {col}: {why.render()}")


_TOKEN = re.compile(
    r"""
    (?P<ws>[ \t\r\f\v]+)
  | (?P<nl>\n)
  | (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<python>%\{.*?\}%)
  | (?P<shell>`[^`]*`)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<unclosed>/\*|%\{|`|")
  | (?P<option>--[A-Za-z_][\w-]*(?:=[^\n]*)?)
  | (?P<ellipsis>\.\.\.)
  | (?P<num>0[xX][0-9a-fA-F]+|\d+(?:\.\d+)?|\.\d+)
  | (?P<word>[A-Za-z_][\w]*)
  | (?P<punct>[<>:()\[\]{},=|+\-.*~@!/&%;'?\\])
    """,
    re.VERBOSE | re.DOTALL,
)
_OPEN = {"(": ")", "[": "]", "{": "}"}
_CLOSE = frozenset(_OPEN.values())


def tokenize(text: str) -> list[Token]:
    """The script's tokens, each with its line and column; a stray character or an unclosed
    comment, string or block is a :class:`ScriptSyntaxError` naming where it starts."""
    out: list[Token] = []
    pos, line, line_start, depth = 0, 1, 0, 0
    space = True
    n = len(text)
    while pos < n:
        m = _TOKEN.match(text, pos)
        col = pos - line_start + 1
        if m is None:
            _bad_char(text, pos, line, col)
        assert m is not None
        kind = m.lastgroup or ""
        tok = m.group()
        if kind == "unclosed":
            _bad_char(text, pos, line, col)
        if kind == "ws":
            space = True
        elif kind == "nl":
            if depth == 0:
                out.append(Token("nl", "\n", line, col, space))
            space = True
        else:
            if kind == "punct" and tok in _OPEN:
                depth += 1
            elif kind == "punct" and tok in _CLOSE:
                depth = max(0, depth - 1)
            out.append(Token(kind, tok, line, col, space))  # type: ignore[arg-type]
            space = False
        newlines = tok.count("\n")
        if newlines:
            line += newlines
            line_start = pos + tok.rindex("\n") + 1
        pos = m.end()
    return out


def _bad_char(text: str, pos: int, line: int, col: int) -> None:
    starts = {
        "/*": msg("a /* comment is never closed"),
        "%{": msg("a %{ block is never closed with }%"),
        "`": msg("a ` command is never closed"),
        '"': msg("a string is never closed"),
    }
    for prefix, why in starts.items():
        if text.startswith(prefix, pos):
            raise ScriptSyntaxError(line, col, why)
    raise ScriptSyntaxError(line, col, msg("unexpected character {c}", c=repr(text[pos])))
