"""Words a simulation emits: a message id with typed parameters, never finished prose.

The id is the English source text with ``{name}`` placeholders (gettext's convention), so the
catalogs under ``app/locale`` are extracted from calls to :func:`msg` and the web layer renders
``gettext(message.id).format(**message.params)`` in the reader's language. Parameters are
numbers, kernel identifiers and sizes: they are the same in every language, so a Chinese step
and an English step always quote the same figures.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TypeAlias

Param: TypeAlias = "int | float | str | Message"

# The translation of the request being served, set by the web layer's language middleware;
# ``str(message)`` uses it so pictures and pages built from messages speak the reader's language.
reader_gettext: ContextVar[Callable[[str], str] | None] = ContextVar("reader_gettext", default=None)


@dataclass(frozen=True, slots=True)
class Message:
    """One translatable sentence (or a few): catalog id plus the values it quotes."""

    id: str
    params: Mapping[str, Param] = field(default_factory=dict)

    def render(self, gettext: Callable[[str], str] | None = None) -> str:
        """The text in one language; ``gettext`` maps an id to its translation (default: English)."""
        text = gettext(self.id) if gettext and self.id else self.id
        if not self.params:
            return text
        # A parameter may itself be a message (e.g. "you gave {what}", what = "a list"): it is
        # rendered in the same language first.
        params = {
            k: v.render(gettext) if isinstance(v, Message) else v for k, v in self.params.items()
        }
        try:
            return text.format_map(params)
        except (KeyError, IndexError, ValueError):
            # A catalog entry with a broken placeholder must not take a page down: fall back to
            # the English source, which tests keep well-formed.
            return self.id.format_map(params)

    def __str__(self) -> str:
        """The text in the reader's language when a web request set one (see
        :data:`reader_gettext`), else English: simulations themselves never set it."""
        return self.render(reader_gettext.get())

    def __contains__(self, text: str) -> bool:
        """``"word" in message``: does the English text contain it (tests read it this way)."""
        return text in self.render()

    def __add__(self, other: Message | str) -> Message:
        """Sentences written one after another: each part is translated on its own."""
        return join("", (self, other))

    def __radd__(self, other: str) -> Message:
        return join("", (other, self))


def join(sep: Message | str, parts: Iterable[Message | str]) -> Message:
    """``sep.join(parts)`` as one message whose parts are translated separately (the joining
    id itself is never in a catalog, so it renders as written); a message ``sep`` (e.g.
    ``msg("; ")``) is translated too."""
    items = tuple(parts)
    if isinstance(sep, Message):
        return Message(
            "{sep}".join(f"{{p{i}}}" for i in range(len(items))),
            {"sep": sep, **{f"p{i}": part for i, part in enumerate(items)}},
        )
    escaped = sep.replace("{", "{{").replace("}", "}}")
    return Message(
        escaped.join(f"{{p{i}}}" for i in range(len(items))),
        {f"p{i}": part for i, part in enumerate(items)},
    )


def msg(text: str, /, **params: Param) -> Message:
    """Mark ``text`` for translation (extracted by Babel's ``msg`` keyword) with its values."""
    return Message(text, params)
