"""The sk_buff picture (issue #10): headers labelled and coloured, bytes outside data..tail
dimmed, moved pointers ghosted with the distance, a zoomed byte axis, labels that never overlap,
text ≥ 12 px and colours with 4.5:1 contrast.

Label boxes here are an approximation computed from the SVG alone: a text element at ``x``/``y``
with font size ``fs`` and ``n`` characters covers ``n × 0.6 fs`` horizontally (the picture's
font is monospace, about 0.6 em per glyph) from its ``text-anchor``, and from ``0.8 fs`` above
the baseline to ``0.2 fs`` below it. tests/browser/test_skb_picture_browser.py checks the same thing
with the browser's real glyph boxes (``getBBox``).
"""

from __future__ import annotations

import itertools
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from app.sim.core import ParamError
from app.sim.skbuff import SkbExplainer
from app.web.explainers.skb import style
from app.web.explainers.skb.picture import picture
from app.web.explainers.skb.scene import drawn_skbs
from tests.sim.skbuff.test_skb_invariants import scenarios

NS = "{http://www.w3.org/2000/svg}"
EX = SkbExplainer()
PRESETS = [p.slug for p in EX.presets]
POINTERS = ("head", "data", "tail", "end")


def _trace(ops: list[dict[str, Any]]) -> Any:
    return EX.run(EX.parse({"ops": ops}))


def _preset(slug: str) -> Any:
    return EX.run(EX.parse(dict(EX.preset(slug).params)))


def _translate(el: ET.Element) -> tuple[float, float]:
    """The translation an element applies (attribute or inline-style transform)."""
    t = el.get("transform", "") + " " + el.get("style", "")
    m = re.search(r"translate\(\s*([-\d.]+)(?:px)?[\s,]+([-\d.]+)(?:px)?\s*\)", t)
    return (float(m.group(1)), float(m.group(2))) if m else (0.0, 0.0)


def text_boxes(svg: str) -> list[tuple[str, tuple[float, float, float, float]]]:
    """Every text element of the picture with its approximate box in picture coordinates."""
    out: list[tuple[str, tuple[float, float, float, float]]] = []

    def walk(el: ET.Element, dx: float, dy: float) -> None:
        tx, ty = _translate(el)
        dx, dy = dx + tx, dy + ty
        if el.tag == f"{NS}text":
            text = "".join(el.itertext())
            fs = float(el.get("font-size"))
            w = len(text) * 0.6 * fs
            x, y = float(el.get("x")) + dx, float(el.get("y")) + dy
            anchor = el.get("text-anchor", "start")
            left = x if anchor == "start" else x - w if anchor == "end" else x - w / 2
            out.append((text, (left, y - 0.8 * fs, left + w, y + 0.2 * fs)))
        for child in el:
            walk(child, dx, dy)

    walk(ET.fromstring(svg), 0.0, 0.0)
    return out


def _overlap(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _drawn(trace: Any, frame: Any) -> list[Any]:
    """The skbs a frame draws (those gone before the step are left out)."""
    prev = trace.frames[frame.index - 1].state if frame.index else None
    return drawn_skbs(frame.state, prev)


def pointer_x(svg: str, skb: str, ptr: str) -> float:
    m = re.search(rf'id="ptr-{skb}-{ptr}"[^>]*translate\(([-\d.]+)px', svg)
    assert m, f"pointer {skb}.{ptr} drawn"
    return float(m.group(1))


def seg(svg: str, start: int, end: int) -> ET.Element:
    """The bar rectangle covering bytes start..end."""
    for el in ET.fromstring(svg).iter(f"{NS}rect"):
        if el.get("data-start") == str(start) and el.get("data-end") == str(end):
            return el
    raise AssertionError(f"no rectangle for bytes {start}..{end}")


@pytest.mark.parametrize("slug", PRESETS)
def test_no_two_labels_overlap_on_any_preset_step(slug: str) -> None:
    """On every step of every preset, no two text boxes of the picture intersect."""
    trace = _preset(slug)
    for frame in trace.frames:
        boxes = text_boxes(picture(trace, frame))
        assert len(boxes) > 10
        clashes = [
            (a[0], b[0]) for a, b in itertools.combinations(boxes, 2) if _overlap(a[1], b[1])
        ]
        assert not clashes, f"{slug} step {frame.index}: {clashes}"


@pytest.mark.parametrize("slug", PRESETS)
def test_text_is_at_least_12px_and_stays_inside_the_picture(slug: str) -> None:
    """Every label is ≥ 12 px at the picture's natural 1000 px width and inside its viewBox."""
    trace = _preset(slug)
    for frame in trace.frames:
        svg = picture(trace, frame)
        root = ET.fromstring(svg)
        width = float(root.get("viewBox").split()[2])
        assert width == 1000
        sizes = [float(t.get("font-size")) for t in root.iter(f"{NS}text")]
        assert sizes and min(sizes) >= 12
        assert not re.search(r"font-size:\s*(\d+(\.\d+)?)px", svg.split("</style>")[0]) or all(
            float(s) >= 12 for s in re.findall(r"font-size:\s*([\d.]+)px", svg)
        )
        for text, (x0, _, x1, _) in text_boxes(svg):
            assert 0 <= x0 and x1 <= width, (frame.index, text)


def test_a_14_byte_pull_moves_the_data_pointer_at_least_20px() -> None:
    """eth_type_trans's skb_pull(14) on a 2 KiB buffer moves data by ≥ 20 px (zoomed axis)."""
    trace = _preset("rx-frame")
    pulls = [f for f in trace.frames if f.op == "skb_pull"]
    assert pulls
    for f in pulls:
        before, after = picture(trace, trace.frames[f.index - 1]), picture(trace, f)
        moved = pointer_x(after, "skb", "data") - pointer_x(before, "skb", "data")
        assert moved >= 20, (f.index, moved)
    # pushes of a 14-byte Ethernet header on transmit too
    tx = _preset("tcp-transmit")
    push = [f for f in tx.frames if f.op == "skb_push"][-1]
    d = pointer_x(picture(tx, tx.frames[push.index - 1]), "clone1", "data") - pointer_x(
        picture(tx, push), "clone1", "data"
    )
    assert d >= 20


def test_pulled_bytes_are_dimmed_at_the_rx_frame_pull_step() -> None:
    """After eth_type_trans pulls 14 bytes, bytes 192..206 lie before data: dimmed and hatched;
    the rest of the frame stays bright. Before the pull the whole frame is bright."""
    trace = _preset("rx-frame")
    pull = next(f for f in trace.frames if f.op == "skb_pull")
    assert pull.state["skbs"][0]["data"] == 206
    svg = picture(trace, pull)
    eth = seg(svg, 192, 206)
    assert "out" in eth.get("class").split() and 'id="' + eth.get("id") + '-hatch"' in svg
    assert "in" in seg(svg, 206, 226).get("class").split()
    assert "in" in seg(svg, 258, 1706).get("class").split()
    before = picture(trace, trace.frames[pull.index - 1])
    assert "in" in seg(before, 192, 206).get("class").split()
    # the last pull leaves all three headers dimmed
    last = [f for f in trace.frames if f.op == "skb_pull"][-1]
    svg = picture(trace, last)
    for start, end in ((192, 206), (206, 226), (226, 258)):
        assert "out" in seg(svg, start, end).get("class").split()


def test_header_regions_carry_a_header_class_and_their_name() -> None:
    """A received frame shows Ethernet (14 B), IP (20 B), TCP (32 B) as headers, the rest as
    payload; headers a transmit path pushes are headers named after their label."""
    trace = _preset("rx-frame")
    put = next(f for f in trace.frames if f.op == "skb_put")
    svg = picture(trace, put)
    texts = " | ".join(t for t, _ in text_boxes(svg))
    for (start, end), name in {(192, 206): "Ethernet", (206, 226): "IP", (226, 258): "TCP"}.items():
        el = seg(svg, start, end)
        assert "header" in el.get("class").split() and el.get("data-label") == name
        assert name in texts
    assert "payload" in seg(svg, 258, 1706).get("class").split()
    tx = _preset("tcp-transmit")
    last_push = [f for f in tx.frames if f.op == "skb_push"][-1]
    svg = picture(tx, last_push)
    for (start, end), name in {(254, 268): "Ethernet", (268, 288): "IP", (288, 320): "TCP"}.items():
        el = seg(svg, start, end)
        assert "header" in el.get("class").split() and el.get("data-label") == name


def _moved(trace: Any, frame: Any) -> dict[str, dict[str, tuple[int, int]]]:
    """Independently of the picture: pointers whose offset changed since the previous frame
    within the same head buffer, per skb."""
    if frame.index == 0:
        return {}
    prev = {s["name"]: s for s in trace.frames[frame.index - 1].state["skbs"]}
    out: dict[str, dict[str, tuple[int, int]]] = {}
    for s in frame.state["skbs"]:
        old = prev.get(s["name"])
        if old and old["buffer"] == s["buffer"]:
            d = {p: (old[p], s[p]) for p in POINTERS if old[p] != s[p]}
            if d:
                out[s["name"]] = d
    return out


@pytest.mark.parametrize("slug", PRESETS)
def test_a_ghost_and_the_distance_appear_exactly_when_a_pointer_moved(slug: str) -> None:
    """A dashed ghost at the old offset and an arrow labelled "+n bytes"/"−n bytes" appear on
    the steps where a pointer moved, for that pointer, and on no other step."""
    trace = _preset(slug)
    for frame in trace.frames:
        svg = picture(trace, frame)
        moved = _moved(trace, frame)
        ghosts = set(re.findall(r'id="ghost-([\w.-]+)-(head|data|tail|end)"', svg))
        assert ghosts == {(s, p) for s, d in moved.items() for p in d}, frame.index
        words = {t for t, _ in text_boxes(svg) if t.endswith(" bytes") and t[0] in "+−"}
        want = {
            f"{'+' if b > a else '−'}{abs(b - a)} bytes"
            for d in moved.values()
            for a, b in d.values()
        }
        assert words == want, frame.index


@pytest.mark.parametrize("slug", PRESETS)
def test_the_byte_axis_is_monotonic_with_break_marks_where_it_zooms(slug: str) -> None:
    """Pointer x grows with the byte offset (never reorders); a zoomed axis marks its breaks
    and labels the offsets where the scale changes."""
    trace = _preset(slug)
    for frame in trace.frames:
        svg = picture(trace, frame)
        for skb in _drawn(trace, frame):
            line = re.search(
                rf'<g id="lane-{re.escape(skb["name"])}" class="seg-line">(.*?)</g>', svg
            )
            if line is not None:  # a GSO segment: one summary line, no byte axis of its own
                frag = skb["frags"][0]
                assert f"{skb['headlen']} header bytes" in line.group(1)
                assert f"+{frag['offset']}, {frag['size']} bytes" in line.group(1)
                continue
            pts = sorted({(skb[p], pointer_x(svg, re.escape(skb["name"]), p)) for p in POINTERS})
            for (o1, x1), (o2, x2) in itertools.pairwise(pts):
                assert (x2 > x1) if o2 > o1 else x2 == x1
        breaks = re.findall(r'class="axis-break" data-offset="(\d+)"', svg)
        ticks = set(re.findall(r'class="tick" data-offset="(\d+)"', svg))
        assert set(breaks) <= ticks | {b for b in breaks if not ticks}
    rx = _preset("rx-frame")
    assert 'class="axis-break"' in picture(rx, rx.frames[3])


def _hex_lum(h: str) -> float:
    h = h.lstrip("#")
    if len(h) == 3:
        h = "".join(c * 2 for c in h)

    def f(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (int(h[i : i + 2], 16) / 255 for i in (0, 2, 4))
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b)


def contrast(a: str, b: str) -> float:
    """WCAG 2.1 contrast ratio of two #rrggbb colours."""
    hi, lo = sorted((_hex_lum(a), _hex_lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def _theme_vars() -> dict[str, dict[str, str]]:
    css = (Path(__file__).resolve().parents[2] / "static" / "css" / "app.css").read_text()
    themes = {}
    for name, sel in (("light", r":root"), ("dark", r'\[data-theme="dark"\]')):
        block = re.search(sel + r"\s*\{([^}]*)\}", css).group(1)
        themes[name] = dict(re.findall(r"--([\w-]+):\s*(#[0-9a-fA-F]{3,6})", block))
    return themes


def test_pointer_colours_and_text_meet_4_5_to_1_in_light_and_dark() -> None:
    """WCAG 1.4.3: pointer lines/labels against the page and panel backgrounds of each theme,
    and dark ink on every coloured fill that carries a label, reach 4.5:1."""
    themes = _theme_vars()
    for i, theme in enumerate(("light", "dark")):
        bgs = (themes[theme]["bg"], themes[theme]["panel"])
        for name, colours in style.POINTER_COLOURS.items():
            for bg in bgs:
                assert contrast(colours[i], bg) >= 4.5, (theme, name, colours[i], bg)
        for bg in bgs:
            assert contrast(themes[theme]["fg"], bg) >= 4.5
    for fill in ("header", "payload", "shinfo", "changed"):
        assert contrast(style.INK, style.FILLS[fill]) >= 4.5, fill
    assert contrast("#ffffff", style.FILLS["banner"]) >= 4.5
    # the old orange tail label (2.25:1 on white) is gone
    assert contrast(style.POINTER_COLOURS["tail"][0], "#ffffff") > 4.5


def test_headers_pushed_by_a_clone_are_drawn_live() -> None:
    """Headers a clone pushed into the shared head are bright while the clone's data covers them."""
    trace = _preset("tcp-transmit")
    pushed = [f for f in trace.frames if f.op == "skb_push"][-1]  # eth header pushed by the clone
    headers = re.findall(r'id="bar-[^"]*" class="seg header (in|out)', picture(trace, pushed))
    assert headers and set(headers) == {"in"}
    # once the clone is consumed, the bytes linger outside every live data..tail: dimmed
    after = re.findall(
        r'id="bar-[^"]*" class="seg header (in|out)', picture(trace, trace.frames[-1])
    )
    assert after and set(after) == {"out"}


def test_panic_frames_show_the_bug_banner() -> None:
    """A BUG outcome draws the vermillion banner naming it."""
    trace = _trace([{"op": "alloc_skb", "size": 128}, {"op": "skb_put", "len": 400}])
    svg = picture(trace, trace.frames[-1])
    assert 'id="panic-banner"' in svg and "skb_over_panic" in svg


def test_ids_are_unique_and_stable_between_steps() -> None:
    """Element ids never repeat in one picture; a pointer keeps its id from step to step."""
    trace = _preset("clone-retransmit")
    for frame in trace.frames:
        ids = re.findall(r'\bid="([^"]+)"', picture(trace, frame))
        assert len(ids) == len(set(ids)), frame.index
        for skb in _drawn(trace, frame):
            assert f'id="ptr-{skb["name"]}-data"' in picture(trace, frame)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_random_scenarios_draw_without_overlaps_or_stray_ghosts(raw: dict[str, Any]) -> None:
    """Any op sequence the editor accepts (clones, copies, GRO lists, expand_head, overruns)
    draws valid SVG whose labels do not overlap and stay inside; ghosts match the moves."""
    try:
        trace = EX.run(EX.parse(raw))
    except ParamError:
        return
    for frame in trace.frames:
        svg = picture(trace, frame)
        boxes = text_boxes(svg)
        clashes = [
            (a[0], b[0]) for a, b in itertools.combinations(boxes, 2) if _overlap(a[1], b[1])
        ]
        assert not clashes, (frame.index, clashes)
        assert all(0 <= x0 and x1 <= 1000 for _, (x0, _, x1, _) in boxes)
        ghosts = set(re.findall(r'id="ghost-([\w.-]+)-(head|data|tail|end)"', svg))
        assert ghosts == {(s, p) for s, d in _moved(trace, frame).items() for p in d}


def test_labels_are_rendered_in_the_readers_language() -> None:
    """The picture's words follow the request's language at render time (none is fixed at
    import): the same frame says "bytes" and "freed" in English and 字节, 已释放 in zh-CN."""
    from app.sim.core.i18n import reader_gettext
    from app.web.i18n import gettext_for

    trace = _trace(
        [
            {"op": "alloc_skb", "size": 1500},
            {"op": "skb_put", "len": 100},
            {"op": "kfree_skb"},
        ]
    )
    frame = trace.frames[-1]
    english = picture(trace, frame)
    token = reader_gettext.set(gettext_for("zh-CN"))
    try:
        chinese = picture(trace, frame)
    finally:
        reader_gettext.reset(token)
    assert " bytes<" in english and "freed" in english
    assert " 字节<" in chinese and "已释放" in chinese
    assert " bytes<" not in chinese and "· freed" not in chinese


def test_an_skb_gro_freed_is_drawn_gone_then_not_at_all() -> None:
    """gro-forward: skb_gro_receive moves seg2's frag into skb and napi_skb_finish frees seg2
    (GRO_MERGED_FREE, net/core/gro.c napi_skb_finish): that step draws seg2's lane marked gone
    (dashed, "(consumed)") over its freed head; from the next step on seg2 and its head buf2 are
    not drawn at all, while skb keeps its lane."""
    trace = _preset("gro-forward")
    i = next(f.index for f in trace.frames if f.op == "skb_gro_receive")
    merged = picture(trace, trace.frames[i])
    lane = re.search(r'<g id="lane-seg2" class="([^"]*)"[^>]*data-status="([^"]*)"', merged)
    assert lane and "gone" in lane.group(1).split() and lane.group(2) == "consumed"
    assert 'id="bar-buf2" class="bar glide freed"' in merged
    for frame in trace.frames[i + 1 :]:
        svg = picture(trace, frame)
        assert 'id="lane-seg2"' not in svg and 'id="bar-buf2"' not in svg, frame.index
        assert 'id="lane-skb"' in svg


def test_a_use_after_free_still_draws_the_freed_skb() -> None:
    """An op on an skb freed steps ago is that step's subject: its lane is drawn (gone)."""
    trace = _trace(
        [
            {"op": "alloc_skb", "size": 256},
            {"op": "consume_skb"},
            {"op": "alloc_skb", "skb": "b", "size": 256},
            {"op": "skb_put", "len": 10},
        ]
    )
    assert 'id="lane-skb"' not in picture(trace, trace.frames[2])
    last = picture(trace, trace.frames[3])
    assert trace.frames[3].result == "use_after_free"
    assert re.search(r'<g id="lane-skb" class="[^"]*gone', last)


def test_a_traces_geometry_is_kept_per_language() -> None:
    """The label rows of a trace are found with the reader's words' widths: a trace drawn in
    English and then in Chinese gets a geometry of its own per language, each reused."""
    from app.sim.core.i18n import reader_gettext
    from app.web.explainers.skb.scene import geometry
    from app.web.i18n import gettext_for

    trace = _preset("gro-forward")
    english = geometry(trace)
    token = reader_gettext.set(gettext_for("zh-CN"))
    try:
        chinese = geometry(trace)
        assert geometry(trace) is chinese
    finally:
        reader_gettext.reset(token)
    assert chinese is not english and geometry(trace) is english
    assert chinese.reader == gettext_for("zh-CN") and english.reader != chinese.reader
