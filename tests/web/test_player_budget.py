"""A page embeds at most PICTURE_BUDGET bytes of step pictures; the player fetches the rest."""

from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.web.player import PICTURE_BUDGET, within_budget


@pytest.fixture
def client(shared_client: TestClient) -> TestClient:
    """These tests only read pages and run scenarios, as any visitor may: the worker's one app
    (tests/conftest.py), as a new visitor."""
    return shared_client


def _frames(sizes: list[int]) -> list[Any]:
    return [SimpleNamespace(picture="x" * n) for n in sizes]


def test_small_pictures_are_all_kept() -> None:
    """Under the budget nothing is dropped and the start is unchanged."""
    frames = _frames([10] * 30)
    start, kept = within_budget(frames, 40, 45, budget=1000)
    assert start == 40 and kept == frames


def test_big_pictures_keep_the_current_one_and_grow_mostly_ahead() -> None:
    """Over the budget the kept frames are contiguous, hold the current step, fit the budget,
    and reach three steps ahead for each one behind."""
    frames = _frames([100] * 40)
    start, kept = within_budget(frames, 0, 20, budget=1000)
    assert len(kept) == 10 and sum(len(f.picture) for f in kept) <= 1000
    assert start <= 20 < start + len(kept)
    behind, ahead = 20 - start, start + len(kept) - 1 - 20
    assert ahead == 3 * behind or ahead == 3 * behind + 1 or ahead == 3 * behind + 2


def test_at_the_end_the_frames_grow_backwards() -> None:
    """At the last step every kept frame is behind it."""
    frames = _frames([100] * 40)
    start, kept = within_budget(frames, 0, 39, budget=1000)
    assert start == 30 and len(kept) == 10


def test_a_page_of_big_pictures_embeds_only_its_budget(client: TestClient) -> None:
    """The largest walkthrough page (every request of a static batch drawn at each step) embeds
    the current step and neighbours up to the budget, not all its frames; the step after the
    last embedded one is fetched from the frames URL like any other."""
    r = client.get("/explainers/scheduler/presets/static-batching?step=60")
    assert r.status_code == 200
    count = int(re.search(r'data-count="(\d+)"', r.text).group(1))
    ids = sorted(int(x) for x in re.findall(r'<template id="frame-(\d+)"', r.text))
    assert 60 in ids and len(ids) < count
    assert ids == list(range(ids[0], ids[-1] + 1))
    pictures = sum(
        len(m) for m in re.findall(r'<template id="frame-\d+"[^>]*>(.*?)</template>', r.text, re.S)
    )
    assert pictures <= PICTURE_BUDGET * 1.3  # pictures plus their words and notes
    url = re.search(r'data-frames-url="([^"]+)"', r.text).group(1).replace("&amp;", "&")
    nxt = ids[-1] + 1
    chunk = client.get(f"{url}&start={nxt}&count=1")
    assert chunk.status_code == 200 and f'id="frame-{nxt}"' in chunk.text
