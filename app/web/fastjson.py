"""JSON answers written by orjson, for the large ones: a run's trace through the API.

Starlette's ``JSONResponse`` writes with the standard library's ``json.dumps``; a large run's
answer is tens of megabytes of JSON, and writing it took longer than the simulation
(``bench/api_speed.py``). :class:`FastJSONResponse` writes the same JSON with orjson (compact,
UTF-8, as Starlette's; numbers in their shortest form, which parse to the same values), and puts
parts an explainer wrote itself (:class:`~app.sim.core.EncodedJSON`, see
``Explainer.public_json_parts``) into the answer as they are.

What orjson refuses (an integer beyond 64 bits) is written as before, by the standard library
(each part an explainer wrote parsed back first).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import orjson
from fastapi.responses import JSONResponse

from app.sim.core import EncodedJSON

OPTIONS = orjson.OPT_NON_STR_KEYS  # keys that are numbers become strings, as json.dumps does


def _fragments(content: Any) -> Any:
    """``content`` with each top-level :class:`EncodedJSON` as an orjson fragment."""
    if isinstance(content, Mapping) and any(isinstance(v, EncodedJSON) for v in content.values()):
        return {
            k: orjson.Fragment(v.data) if isinstance(v, EncodedJSON) else v
            for k, v in content.items()
        }
    return content


def _plain(content: Any) -> Any:
    """``content`` with each top-level :class:`EncodedJSON` parsed back to its value."""
    if isinstance(content, Mapping):
        return {
            k: json.loads(v.data) if isinstance(v, EncodedJSON) else v for k, v in content.items()
        }
    return content


class FastJSONResponse(JSONResponse):
    """A ``JSONResponse`` written by orjson."""

    def render(self, content: Any) -> bytes:
        try:
            return orjson.dumps(_fragments(content), option=OPTIONS)
        except TypeError:  # orjson.JSONEncodeError is one: an integer past 64 bits
            return super().render(_plain(content))
