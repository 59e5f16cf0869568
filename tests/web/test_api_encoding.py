"""The run API's answers are written by orjson (app.web.fastjson) and, where an explainer writes
a part itself (``Explainer.public_json_parts``), from those bytes: every explainer's answer
parses to its documented JSON (``trace_json``: ``public_json`` and the simulation version), in
both languages, through the run route and a job's result alike."""

from __future__ import annotations

import gzip
import json
import time
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app import explainers
from app.sim.core import EncodedJSON, Explainer
from app.web import fastjson, i18n
from app.web.fastjson import FastJSONResponse
from app.web.plugin import Plugin
from app.web.routes.api import trace_json, trace_parts

PLUGINS = list(explainers.builtin())


def documented(plugin: Plugin, trace: Any) -> Any:
    """``trace_json`` as a client reads it (through the standard library's JSON)."""
    return json.loads(json.dumps(trace_json(plugin, trace)))


def writes_parts(plugin: Plugin) -> bool:
    return type(plugin.sim).public_json_parts is not Explainer.public_json_parts


def cases() -> list[Any]:
    """Every explainer's default preset; every preset of an explainer that writes parts itself."""
    out = []
    for plugin in PLUGINS:
        for preset in plugin.sim.presets:
            if writes_parts(plugin) or preset.slug == plugin.sim.default_preset:
                out.append(pytest.param(plugin, preset.params, id=f"{plugin.name}-{preset.slug}"))
    return out


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize(("plugin", "raw"), cases())
def test_the_answer_parses_to_the_documented_json(plugin: Plugin, raw: Any, lang: str) -> None:
    trace = plugin.sim.run(plugin.sim.parse(raw))
    token = i18n.use(lang)
    try:
        full = FastJSONResponse(trace_parts(plugin, trace, form="full")).body
        compact = FastJSONResponse(trace_parts(plugin, trace)).body
        expected = documented(plugin, trace)
    finally:
        i18n.reset(token)
    assert json.loads(full) == expected
    assert plugin.sim.decode_compact(json.loads(compact)) == expected
    assert (compact == full) is (plugin.sim.compact_form is None)


def test_some_explainer_writes_a_part_itself() -> None:
    """The contract's hook is used (else the test above proves only orjson)."""
    assert any(writes_parts(p) for p in PLUGINS)


def test_each_part_written_is_json_of_the_documented_value() -> None:
    for plugin in filter(writes_parts, PLUGINS):
        preset = plugin.sim.preset(plugin.sim.default_preset)
        assert preset is not None
        trace = plugin.sim.run(plugin.sim.parse(preset.params))
        parts = plugin.sim.public_json_parts(trace)
        plain = json.loads(json.dumps(plugin.sim.public_json(trace)))
        assert set(parts) == set(plain)
        assert any(isinstance(v, EncodedJSON) for v in parts.values())
        for key, value in parts.items():
            got = json.loads(value.data) if isinstance(value, EncodedJSON) else value
            assert json.loads(json.dumps(got)) == plain[key], key


def test_what_orjson_cannot_write_is_written_as_before() -> None:
    """An integer past 64 bits goes through the standard library (with the parts written
    already parsed back); keys that are numbers become strings, as json.dumps makes them."""
    content = {"big": 10**30, "part": EncodedJSON(b'[1,{"a":2}]'), "keys": {1: "x"}}
    assert json.loads(FastJSONResponse(content).body) == {
        "big": 10**30,
        "part": [1, {"a": 2}],
        "keys": {"1": "x"},
    }
    assert FastJSONResponse({"n": float("nan")}).body == b'{"n":null}'


@pytest.mark.parametrize("plugin", [p for p in PLUGINS if writes_parts(p)], ids=lambda p: p.name)
def test_run_and_job_result_answer_the_same_json(client: TestClient, plugin: Plugin) -> None:
    preset = plugin.sim.preset(plugin.sim.default_preset)
    assert preset is not None
    r = client.post(f"/api/v1/explainers/{plugin.name}/run", json=preset.params)
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/json"
    site = client.app.state.site  # type: ignore[attr-defined]
    sim = site.get(plugin.name).sim
    key = site.runs.key(sim, sim.parse(preset.params))
    trace = site.runs.cached(key)
    for _ in range(600):  # a new run is answered before its trace is stored (app.web.runs)
        if trace is not None:
            break
        time.sleep(0.05)
        trace = site.runs.cached(key)
    assert plugin.sim.decode_compact(r.json()) == documented(plugin, trace)
    assert client.get(f"/api/v1/jobs/{key}/result").json() == r.json()
    full = client.post(f"/api/v1/explainers/{plugin.name}/run?form=full", json=preset.params)
    assert full.json() == documented(plugin, trace)
    assert client.get(f"/api/v1/jobs/{key}/result?form=full").json() == full.json()


def test_openapi_documents_the_run_answer_as_json(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    ok = spec["paths"]["/api/v1/explainers/{name}/run"]["post"]["responses"]["200"]
    assert "application/json" in ok["content"]


def test_a_large_answer_is_gzipped_here_for_a_client_that_accepts_it(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over GZIP_AT bytes, a client accepting gzip gets the answer compressed by the response
    (at GZIP_LEVEL; the GZip middleware passes it on as it is), one that does not gets it plain;
    both read the same JSON."""
    monkeypatch.setattr(fastjson, "GZIP_AT", 1000)
    plugin = next(p for p in PLUGINS if writes_parts(p))
    preset = plugin.sim.preset(plugin.sim.default_preset)
    assert preset is not None
    url = f"/api/v1/explainers/{plugin.name}/run"
    zipped = client.post(url, json=preset.params, headers={"Accept-Encoding": "gzip"})
    plain = client.post(url, json=preset.params, headers={"Accept-Encoding": "identity"})
    assert zipped.status_code == plain.status_code == 200
    assert zipped.headers["content-encoding"] == "gzip"
    assert "accept-encoding" in zipped.headers["vary"].lower()
    assert "content-encoding" not in plain.headers
    assert zipped.json() == plain.json()
    assert int(zipped.headers["content-length"]) < len(plain.content)


def test_gzip_only_past_the_size_and_when_accepted() -> None:
    small = FastJSONResponse({"a": 1}, gzip=True)
    assert small.body == b'{"a":1}' and "content-encoding" not in small.headers
    big = {"x": "y" * (fastjson.GZIP_AT + 10)}
    assert "content-encoding" not in FastJSONResponse(big).headers
    zipped = FastJSONResponse(big, gzip=True)
    assert zipped.headers["content-encoding"] == "gzip"
    assert json.loads(gzip.decompress(zipped.body)) == big
    assert fastjson.accepts_gzip("br, gzip;q=0.5") and not fastjson.accepts_gzip(None)
