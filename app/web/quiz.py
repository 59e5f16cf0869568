"""Questions a walkthrough can ask at a step ("what happens next?"), generated from its trace.

An explainer's view offers them through ``WebView.question`` (``(trace, step) -> Question |
None``): live classes and self-study ask them; an explainer without one, or a step it has no
question for, answers ``None``. Words are messages, stored as JSON and rendered per reader.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from app.sim.core import Message
from app.web import i18n


@dataclass(frozen=True, slots=True, kw_only=True)
class Question:
    prompt: Message
    choices: tuple[Message, ...]  # 2 to 6 choices, one of them right
    correct: int  # index into ``choices``
    answer_step: int  # the step whose picture shows the answer
    explanation: Message  # why (the answer step's narration, usually)

    def __post_init__(self) -> None:
        if not 2 <= len(self.choices) <= 6 or not 0 <= self.correct < len(self.choices):
            raise ValueError("a question has 2 to 6 choices and one right answer among them")


def message_json(m: Message) -> dict[str, Any]:
    params = {k: message_json(v) if isinstance(v, Message) else v for k, v in m.params.items()}
    return {"id": m.id, "params": params}


def message_from(data: dict[str, Any]) -> Message:
    params = {
        k: message_from(v) if isinstance(v, dict) else v for k, v in data.get("params", {}).items()
    }
    return Message(str(data["id"]), params)


def dumps(value: Message | tuple[Message, ...]) -> str:
    if isinstance(value, Message):
        return json.dumps(message_json(value))
    return json.dumps([message_json(m) for m in value])


def render_json(text: str) -> Any:
    """A stored message (or list of them) in the current request's language."""
    data = json.loads(text)
    if isinstance(data, list):
        return [i18n.render(message_from(d)) for d in data]
    return i18n.render(message_from(data))
