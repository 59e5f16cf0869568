"""An event's sentence in a congestion trace.

Kept apart from :mod:`~app.sim.congestion.flow`, which is compiled by mypyc
(``scripts/build_native.py``): a ``str`` subclass must stay an ordinary Python class. Traces
stored before the move name ``app.sim.congestion.flow.Narration``, which ``flow`` re-exports.
"""

from __future__ import annotations

from app.sim.core.i18n import Message


class Narration(str):
    """An event's sentence: the English text (a ``str``, so JSON and tests read it as before)
    that remembers the :class:`Message` it was rendered from."""

    message: Message

    def __new__(cls, message: Message) -> Narration:
        self = super().__new__(cls, message.render())
        self.message = message
        return self

    def __reduce__(self) -> tuple[type[Narration], tuple[Message]]:
        return (Narration, (self.message,))
