"""argparse in the invocation's language: the help option, the ``usage:`` and section headings
and the common parse errors go through the catalogs (argparse's own words are English only).

The parser is built per invocation after :mod:`app.record.lang` has chosen the language and
``cli.main`` has made it current (``reader_gettext``), so ``str(msg(...))`` here renders in it.
An argparse error this module does not know stays English inside the translated frame.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Iterable
from typing import NoReturn

from app.sim.core.i18n import Message, msg


class Formatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the descriptions' line breaks; says ``usage:`` in the invocation's language."""

    def add_usage(
        self,
        usage: str | None,
        actions: Iterable[argparse.Action],
        groups: Iterable[argparse._MutuallyExclusiveGroup],
        prefix: str | None = None,
    ) -> None:
        if prefix is None:
            prefix = str(msg("usage:"))
            prefix += "" if prefix.endswith("：") else " "  # a full-width colon has its space
        super().add_usage(usage, actions, groups, prefix)


    def format_help(self) -> str:
        # argparse ends a section heading with an ASCII ':'; a Chinese heading takes '：'
        return _CJK_HEADING.sub("\\1：", super().format_help())


_CJK_HEADING = re.compile(r"^(\S[^\n]*[\u4e00-\u9fff]):$", re.M)


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose own words (help option, headings, errors) are translated."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("formatter_class", Formatter)
        kwargs["add_help"] = False
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._positionals.title = str(msg("positional arguments"))
        self._optionals.title = str(msg("options"))
        self.add_argument(
            "-h",
            "--help",
            action="help",
            default=argparse.SUPPRESS,
            help=str(msg("show this help message and exit")),
        )

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        error = msg("error: {reason}", reason=translate_error(message))
        self.exit(2, f"{self.prog}: {error}\n")


def _argument(m: re.Match[str]) -> Message:
    return msg("argument {name}: {reason}", name=m[1], reason=translate_error(m[2]))


# argparse's English error texts (Python 3.11-3.13) → the catalog's; first match wins.
_ERRORS: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], Message]], ...] = (
    (
        re.compile(r"the following arguments are required: (.+)", re.S),
        lambda m: msg("the following arguments are required: {names}", names=m[1]),
    ),
    (
        re.compile(r"unrecognized arguments: (.*)", re.S),
        lambda m: msg("unrecognized arguments: {args}", args=m[1]),
    ),
    (
        re.compile(r"invalid choice: (.+?) \(choose from (.+)\)", re.S),
        lambda m: msg("invalid choice: {value} (choose from {choices})", value=m[1], choices=m[2]),
    ),
    (re.compile(r"expected one argument"), lambda m: msg("expected one argument")),
    (
        re.compile(r"invalid \S+ value: (.+)", re.S),
        lambda m: msg("invalid value: {value}", value=m[1]),
    ),
    (
        re.compile(r"ambiguous option: (\S+) could match (.+)", re.S),
        lambda m: msg("ambiguous option: {option} could match {matches}", option=m[1],
                      matches=m[2]),
    ),
    (re.compile(r"argument (\S+?): (.+)", re.S), _argument),
)


def translate_error(text: str) -> Message | str:
    """argparse's error ``text`` as a catalog message when it is one argparse is known to say
    (recursively for ``argument X: ...``); our own type errors are already translated."""
    for pattern, make in _ERRORS:
        m = pattern.fullmatch(text)
        if m:
            return make(m)
    return text
