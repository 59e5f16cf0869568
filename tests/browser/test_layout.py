"""One step on one screen, at 1440×900, on a 390×844 phone and in a 960×600 embed, in every
theme: the controls never cover the picture, narration, note or charts, nothing is painted over
the controls, and text labels inside a picture never overlap (issue #10).

Every registered explainer's presets are walked (``app.explainers.builtin()``), so a new
explainer is covered without touching this file. Sampling, to keep the suite fast: every step of
every preset is measured at 1440×900 in the light theme, labels and type size included (the
picture's geometry does not depend on the theme: themes change colours, and the projector
theme's larger type is checked on the samples). Every other size and theme (1440×900 dark and
projector; the phone in all three; the embed in all three, loaded in the projector theme the
Embed menu offers by default) is measured on each preset's first and last step and on its tallest steps (the one with
the most picture content and the one with the most side text, found during the full walk): the
layout is a function of those heights, so a step that fits when the tallest do also fits.
Stepping uses the player's own JS API (``window.Stepscope.goto``), never a reload; themes switch
the way the theme picker does (the ``data-theme`` attribute), sizes with the viewport.

"Fits one screen" (1440×900 and the embed): the step's picture (``#stage``), narration and "what
to notice" note lie wholly inside the viewport at scroll 0 and inside their scroll boxes (a
picture box may scroll or scale its content; a picture the player draws big, in an embed or the
projector theme, need only show the element it marks ``data-focus``). On the phone the narration starts within one
screen height of the picture's top. At every size the controls take at most 10 % of the screen
height, overlap neither the picture box nor the narration column, nothing is painted over them
or over the picture, narration and note (elementFromPoint), and the page is never wider than
the screen. Charts still drawing say so (aria-busy) and are waited for. Labels are
SVG ``text`` and HTML ``[data-label]`` elements inside the picture; anything inside
``[data-decorative]`` is exempt (nothing is marked so today); 1 px of overlap is tolerated. At
1440×900 no picture text is drawn below 12 px (its font size through the SVG's scaling), and a
picture element marked ``data-fits-screen`` (the explainer's promise that it needs no scrolling
there) lies wholly in view, clear of the controls.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from app.explainers import builtin
from tests.browser.recs import upload

CASES = [(pl.name, p.slug) for pl in builtin() for p in pl.sim.presets]
THEMES = ("light", "dark", "projector")
DESKTOP = {"width": 1440, "height": 900}
PHONE = {"width": 390, "height": 844}
EMBED = {"width": 960, "height": 600}
TYPE_FLOOR = 12  # px: the smallest type a picture may be drawn at on the 1440×900 screen

# Measures the player as it stands and says what is wrong (loaded with add_script_tag).
PROBE = r"""
// Layout probe for tests/browser/test_layout.py: measures the player as it stands (bounding
// boxes, elementsFromPoint) and returns what is wrong, as readable strings. Loaded into the page
// with add_script_tag; defines window.__layout.
(function () {
  "use strict";
  const TOL = 1; // px: touching boxes and sub-pixel rounding are not overlaps

  function box(r) { return { l: r.left, t: r.top, r: r.right, b: r.bottom }; }
  function area(b) { return Math.max(0, b.r - b.l) * Math.max(0, b.b - b.t); }
  function cut(a, b) {
    return { l: Math.max(a.l, b.l), t: Math.max(a.t, b.t), r: Math.min(a.r, b.r), b: Math.min(a.b, b.b) };
  }
  function overlaps(a, b) {
    const c = cut(a, b);
    return c.r - c.l > TOL && c.b - c.t > TOL;
  }
  function fmt(b) { return "[" + [b.l, b.t, b.r, b.b].map((v) => Math.round(v)).join(",") + "]"; }
  function viewport() { return { l: 0, t: 0, r: window.innerWidth, b: window.innerHeight }; }

  // The part of an element its scrolling/clipping ancestors let through (page coordinates of
  // the viewport; the viewport itself is not applied here).
  function clipped(el) {
    let b = box(el.getBoundingClientRect());
    for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
      const cs = getComputedStyle(p);
      if (cs.overflowX !== "visible" || cs.overflowY !== "visible") {
        const pb = box(p.getBoundingClientRect());
        // the clip box is the padding box: borders and scrollbars are not content
        const inner = {
          l: pb.l + p.clientLeft, t: pb.t + p.clientTop,
          r: pb.l + p.clientLeft + p.clientWidth, b: pb.t + p.clientTop + p.clientHeight,
        };
        b = cut(b, inner);
      }
    }
    return b;
  }

  function visible(el) {
    if (!el || !el.isConnected) return false;
    if (el.checkVisibility && !el.checkVisibility({ opacityProperty: true, visibilityProperty: true })) return false;
    const r = el.getBoundingClientRect();
    return r.width > 0 && r.height > 0;
  }

  // Points of a grid inside box b (inset), within the viewport.
  function points(b, nx, ny) {
    const v = viewport();
    const c = cut(b, { l: v.l + 1, t: v.t + 1, r: v.r - 1, b: v.b - 1 });
    const out = [];
    if (c.r - c.l < 4 || c.b - c.t < 4) return out;
    for (let i = 0; i < nx; i++) {
      for (let j = 0; j < ny; j++) {
        out.push([c.l + 2 + ((c.r - c.l - 4) * (i + 0.5)) / nx, c.t + 2 + ((c.b - c.t - 4) * (j + 0.5)) / ny]);
      }
    }
    return out;
  }
  function describe(el) {
    if (!el) return "nothing";
    const cls = el.getAttribute && el.getAttribute("class");
    return el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + (cls ? "." + String(cls).split(/\s+/).join(".") : "");
  }
  // What is painted on top at each grid point of ``el`` must belong to ``owner``.
  function onTop(el, owner, name, nx, ny, out) {
    for (const [x, y] of points(clipped(el), nx, ny)) {
      const top = document.elementFromPoint(x, y);
      if (top && !owner.contains(top)) {
        out.push(name + " is covered by " + describe(top) + " at (" + Math.round(x) + "," + Math.round(y) + ")");
        return;
      }
    }
  }

  // Text elements inside the picture (SVG text, and HTML marked data-label); an element inside
  // [data-decorative] is exempt (none is marked so today).
  function labels(wrap) {
    const out = [];
    for (const el of wrap.querySelectorAll("svg text, [data-label]")) {
      if (el.closest("[data-decorative]")) continue;
      if (el.tagName.toLowerCase() !== "text" && !(el instanceof HTMLElement)) continue;
      if (!el.textContent || !el.textContent.trim()) continue;
      if (!visible(el)) continue;
      out.push(el);
    }
    return out;
  }
  // The 1 px tolerated is 1 px of the picture as drawn to fit: a picture the player draws
  // bigger (data-pic-zoom) scales it too.
  function labelClashes(wrap, out) {
    const els = labels(wrap);
    const boxes = els.map((e) => box(e.getBoundingClientRect()));
    const zoom = Math.max(1, parseFloat(document.getElementById("player").dataset.picZoom || "1"));
    const clash = (a, b) => { const c = cut(a, b); return c.r - c.l > TOL * zoom && c.b - c.t > TOL * zoom; };
    let n = 0;
    for (let i = 0; i < els.length; i++) {
      for (let j = i + 1; j < els.length; j++) {
        if (els[i].contains(els[j]) || els[j].contains(els[i])) continue;
        if (clash(boxes[i], boxes[j])) {
          if (n++ < 3) {
            out.push("labels overlap: \"" + els[i].textContent.trim().slice(0, 40) + "\" " + fmt(boxes[i]) +
              " and \"" + els[j].textContent.trim().slice(0, 40) + "\" " + fmt(boxes[j]));
          }
        }
      }
    }
    return els.length;
  }

  // Is all of el on screen: not clipped by a scrolling ancestor nor by the viewport v?
  function inView(el, v) {
    const own = box(el.getBoundingClientRect());
    const seen = cut(clipped(el), v);
    return { own, seen, whole: area(seen) >= area(own) - TOL * ((own.r - own.l) + (own.b - own.t)) - 1 };
  }

  // A focus bigger than the picture box it is shown in fills the box in that direction (and
  // is whole in the other).
  function fills(seen, own, view) {
    const wide = own.r - own.l > view.r - view.l + TOL;
    const tall = own.b - own.t > view.b - view.t + TOL;
    const okX = wide ? seen.r - seen.l >= view.r - view.l - 2 : seen.r - seen.l >= own.r - own.l - 2;
    const okY = tall ? seen.b - seen.t >= view.b - view.t - 2 : seen.b - seen.t >= own.b - own.t - 2;
    return (wide || tall) && okX && okY;
  }

  // Picture text drawn smaller than ``floor`` px (its font size through the SVG's scaling).
  function smallType(wrap, floor, out) {
    let n = 0;
    for (const el of labels(wrap)) {
      if (el.tagName.toLowerCase() !== "text") continue;
      const m = el.getScreenCTM();
      if (!m) continue;
      const px = parseFloat(getComputedStyle(el).fontSize) * Math.hypot(m.a, m.b);
      if (px < floor - 0.05 && n++ < 3) {
        out.push("text \"" + el.textContent.trim().slice(0, 40) + "\" is drawn at " + px.toFixed(1) + " px (< " + floor + ")");
      }
    }
  }

  // One check of the step on screen. mode: "fit" (the picture, narration and note lie in the
  // viewport, the page unscrolled) or "phone" (the narration starts within one screen height
  // of the picture's top). typeFloor: the smallest picture type allowed, in px (0: unchecked).
  function check(mode, withLabels, typeFloor) {
    const out = [];
    const v = viewport();
    if (mode === "fit" && window.scrollY !== 0) out.push("the page is scrolled by " + window.scrollY + " px");
    const wrap = document.querySelector(".stage-wrap");
    const stage = document.getElementById("stage");
    const side = document.getElementById("side");
    const sideCol = side ? side.parentElement : null;
    const ctl = document.querySelector(".player .controls");
    const narration = side && side.querySelector(".narration");
    const note = side && side.querySelector(".notice");
    if (!wrap || !stage || !side) return ["player parts missing"];

    if (document.documentElement.scrollWidth > v.r + TOL) {
      out.push("the page is wider than the screen: " + document.documentElement.scrollWidth + " px");
    }
    const c = ctl && visible(ctl) ? box(ctl.getBoundingClientRect()) : null;
    if (c) {
      const content = [["picture", wrap], ["narration column", sideCol]];
      for (const [name, el] of content) {
        if (visible(el) && overlaps(c, clipped(el))) out.push("controls " + fmt(c) + " overlap the " + name + " " + fmt(clipped(el)));
      }
      onTop(ctl, ctl, "controls", 6, 2, out);
      if (c.b - c.t > 0.1 * v.b) out.push("controls take " + Math.round(c.b - c.t) + " px of " + v.b);
    }
    // A picture the player drew big (projector, embed: class pic-zoomed) scrolls in its box to
    // the step's focus: then the focus, not the whole picture, must be in view.
    const zoomed = document.getElementById("player").classList.contains("pic-zoomed");
    const shown = zoomed ? stage.querySelector("[data-focus]") : stage;
    const targets = [["picture", shown], ["narration", narration], ["note", note]];
    for (const [name, el] of targets) {
      if (!el || !visible(el)) continue;
      onTop(el, name === "picture" ? wrap : side, name, zoomed && name === "picture" ? 1 : 2, zoomed && name === "picture" ? 1 : 2, out);
      if (mode === "fit") {
        const { own, seen, whole } = inView(el, v);
        if (!whole && zoomed && name === "picture" && fills(seen, own, cut(clipped(wrap), v))) continue;
        if (!whole) {
          out.push(name + " " + fmt(own) + " is not all in view (visible " + fmt(seen) + ", screen " + v.r + "x" + v.b + ")");
        }
      }
    }
    if (mode === "phone" && narration) {
      const gap = narration.getBoundingClientRect().top - wrap.getBoundingClientRect().top;
      if (gap > v.b) out.push("narration starts " + Math.round(gap) + " px below the picture's top (screen " + v.b + ")");
    }
    if (withLabels) labelClashes(wrap, out);
    if (typeFloor) {
      smallType(wrap, typeFloor, out);
      // a picture that says it fits the screen is wholly in view, nothing of it scrolled away
      for (const el of wrap.querySelectorAll("[data-fits-screen]")) {
        const { own, whole } = inView(el, v);
        if (!whole || (c && overlaps(c, own))) {
          out.push(describe(el) + " " + fmt(own) + " says it fits the screen but is not all in view");
        }
      }
    }
    return out;
  }

  const root = () => document.getElementById("player");
  function frame() { return new Promise((r) => requestAnimationFrame(() => r())); }
  // Show step n with the player's own API and wait until it is on the page.
  async function show(n) {
    const S = window.Stepscope;
    S.pause();
    S.goto(n);
    for (let i = 0; i < 400; i++) {
      const p = root();
      if (p.dataset.step === String(n) && !p.classList.contains("loading") &&
          document.getElementById("frame-" + n)) return;
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error("step " + n + " never showed");
  }
  // Height of what the step shows: picture content and side content (for "tallest step").
  function heights() {
    const wrap = document.querySelector(".stage-wrap");
    const side = document.getElementById("side");
    return [wrap ? wrap.scrollHeight : 0, side ? side.scrollHeight : 0];
  }

  async function walk(steps, mode, withLabels, tag, typeFloor) {
    const problems = [];
    const tall = [];
    for (const n of steps) {
      await show(n);
      for (const p of check(mode, withLabels, typeFloor)) problems.push(tag + " step " + n + ": " + p);
      tall.push(heights());
    }
    return { problems, tall };
  }
  // Wait until the picture's layout stops changing (charts redraw after a resize or theme,
  // and say so with aria-busy while they do): the same boxes on two looks ``pause`` ms (and a
  // frame) apart. A theme applies at once (the player and charts watch data-theme), so a frame
  // apart is enough; after a resize the player fits 60 ms later, so the looks are 40 ms apart.
  async function settle(pause = 40) {
    const sig = () => Array.from(document.querySelectorAll(".stage-wrap, .stage-wrap svg, #side"))
      .map((e) => { const r = e.getBoundingClientRect(); return [r.width, r.height].join("x"); }).join(";");
    if (document.fonts) await document.fonts.ready;
    let last = "";
    for (let i = 0; i < 60; i++) {
      await frame();
      if (pause) await new Promise((r) => setTimeout(r, pause));
      const now = sig();
      const waiting = document.querySelector(".plotly-pending, .stage-wrap [aria-busy='true']");
      if (now === last && !waiting) return;
      last = now;
    }
  }
  window.__layout = { check, walk, settle, show };
})();
"""


@pytest.fixture(scope="module")
def tab(browser: Any) -> Iterator[Any]:
    """One browser tab for the whole module: a new context and page per walkthrough cost more
    CPU than walking it (a renderer started and every script and style fetched and compiled
    again). Each walkthrough loads its own page in it (:func:`_open`) as a new visitor."""
    context = browser.new_context(viewport=DESKTOP, reduced_motion="reduce", bypass_csp=True)
    try:
        yield context.new_page()
    finally:
        context.close()


def _open(page: Any, url: str, viewport: dict[str, int]) -> Any:
    """Load ``url`` in the tab at ``viewport``, without cookies (a new visitor; the app keeps
    nothing else in the browser unless a visitor picks a theme or starts a class), with the
    probe, once the layout has settled."""
    page.context.clear_cookies()
    page.set_viewport_size(viewport)
    page.goto(url, wait_until="load")
    page.add_script_tag(content=PROBE)
    page.evaluate("__layout.settle()")
    return page


def _walk(
    page: Any, steps: list[int], mode: str, tag: str, type_floor: float = 0
) -> tuple[list[str], list[list[int]]]:
    out = page.evaluate(
        "([s, m, t, f]) => __layout.walk(s, m, true, t, f)", [steps, mode, tag, type_floor]
    )
    return list(out["problems"]), list(out["tall"])


def _theme(page: Any, theme: str, resized: bool = False) -> None:
    """Switch the theme and wait for the layout to settle (longer just after a resize)."""
    page.evaluate(
        "([t, p]) => { document.documentElement.dataset.theme = t; return __layout.settle(p); }",
        [theme, 40 if resized else 0],
    )


def _tallest(heights: list[list[int]], which: int) -> int:
    return max(range(len(heights)), key=lambda n: heights[n][which])


@pytest.mark.parametrize(("explainer", "slug"), CASES, ids=[f"{e}-{s}" for e, s in CASES])
def test_every_step_fits_one_screen_and_nothing_overlaps(
    live_server: Any, tab: Any, explainer: str, slug: str
) -> None:
    """Each preset step: controls cover nothing and nothing covers them, labels don't overlap,
    picture, narration and note fit 1440×900 (page unscrolled, picture type ≥ 12 px as drawn)
    and a 960×600 embed, and on a phone the narration starts within a screen of the picture, in
    the light, dark and projector themes."""
    problems: list[str] = []
    page = _open(tab, f"{live_server.url}/explainers/{explainer}/presets/{slug}", DESKTOP)
    count = int(page.evaluate("window.Stepscope.count"))
    assert count > 0
    found, heights = _walk(page, list(range(count)), "fit", "1440x900 light", TYPE_FLOOR)
    problems += found
    samples = sorted({0, count - 1, _tallest(heights, 0), _tallest(heights, 1)})
    for theme in ("dark", "projector"):
        _theme(page, theme)
        problems += _walk(page, samples, "fit", f"1440x900 {theme}")[0]
    page.set_viewport_size(PHONE)
    for i, theme in enumerate(THEMES):
        _theme(page, theme, resized=i == 0)
        problems += _walk(page, samples, "phone", f"390x844 {theme}")[0]
    embed = f"{live_server.url}/embed/{explainer}/presets/{slug}?theme=projector"
    page = _open(tab, embed, EMBED)
    for theme in ("projector", "light", "dark"):
        _theme(page, theme)
        problems += _walk(page, samples, "fit", f"embed 960x600 {theme}")[0]
    assert not problems, f"{len(problems)} layout faults:\n" + "\n".join(problems[:25])


RECORDING_KINDS = ["capture", "tcp", "cwnd", "path"]


@pytest.mark.parametrize("kind", RECORDING_KINDS)
def test_recording_pages_fit_one_screen(live_server: Any, tab: Any, kind: str) -> None:
    """A recording's page (/r/{id}) of each kind, uploaded through the API, in every theme and
    frame an ordinary walkthrough is checked in, by the same probe: every step at 1440×900 in
    the light theme (labels, type ≥ 12 px), its first, last and tallest steps in the dark and
    projector themes, on a phone (390×844) in all three, and in its 960×600 embed in all three
    (loaded in the projector theme, as the Embed menu offers)."""
    path = upload(live_server.url, kind)
    problems: list[str] = []
    page = _open(tab, f"{live_server.url}{path}", DESKTOP)
    count = int(page.evaluate("window.Stepscope.count"))
    found, heights = _walk(page, list(range(count)), "fit", "1440x900 light", TYPE_FLOOR)
    problems += found
    samples = sorted({0, count - 1, _tallest(heights, 0), _tallest(heights, 1)})
    for theme in ("dark", "projector"):
        _theme(page, theme)
        problems += _walk(page, samples, "fit", f"1440x900 {theme}")[0]
    page.set_viewport_size(PHONE)
    for i, theme in enumerate(THEMES):
        _theme(page, theme, resized=i == 0)
        problems += _walk(page, samples, "phone", f"390x844 {theme}")[0]
    embed = f"{live_server.url}/embed{path}?theme=projector"
    page = _open(tab, embed, EMBED)
    for theme in ("projector", "light", "dark"):
        _theme(page, theme)
        problems += _walk(page, samples, "fit", f"embed 960x600 {theme}")[0]
    assert not problems, f"{len(problems)} layout faults:\n" + "\n".join(problems[:25])
