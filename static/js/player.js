// The step-through player shared by every explainer.
// Frames are server-rendered into <template id="frame-N"> elements; stepping morphs the stage,
// the field table and the side panel in place (stable ids), so CSS transitions glide pointers.
// Announces every change as a "stepscope:step" event; the URL always carries ?step=N.
(function () {
  "use strict";
  const root = document.getElementById("player");
  if (!root) return;
  const count = parseInt(root.dataset.count || "0", 10);
  let step = parseInt(root.dataset.step || "0", 10);
  let timer = null;
  const speeds = [0.5, 1, 2, 4];
  const $ = (id) => document.getElementById(id);
  const parts = { stage: $("stage"), fields: $("fields"), side: $("side") };

  function morph(el, html) {
    if (!el) return;
    if (window.Idiomorph) {
      window.Idiomorph.morph(el, html, { morphStyle: "innerHTML" });
    } else {
      el.innerHTML = html;
    }
  }

  // Long traces embed only a window of frames; the rest are fetched on demand in chunks on a
  // fixed grid (frames 0-39, 40-79, ...): stepping fast asks for each chunk once, not once a
  // step, and every reader of a scenario asks for the same URLs, which the server keeps.
  const CHUNK = 40;
  const store = document.querySelector(".frame-store");
  const framesUrl = store ? store.dataset.framesUrl || "" : "";
  const pending = new Map();
  function ensure(n) {
    if (n < 0 || n >= count || $("frame-" + n)) return Promise.resolve();
    if (!framesUrl || !store) return Promise.resolve();
    const start = n - (n % CHUNK);
    if (!pending.has(start)) {
      const url = framesUrl + (framesUrl.indexOf("?") >= 0 ? "&" : "?") + "start=" + start + "&count=" + CHUNK;
      pending.set(start, fetch(url, { credentials: "same-origin" })
        .then((r) => (r.ok ? r.text() : ""))
        .then((html) => {
          const tmp = document.createElement("div");
          tmp.innerHTML = html;
          tmp.querySelectorAll("template").forEach((t) => { if (!$(t.id)) store.appendChild(t); });
        })
        .catch(() => {})
        .finally(() => pending.delete(start)));
    }
    return pending.get(start);
  }
  function prefetch() {
    ensure(Math.min(step + 15, count - 1));
    ensure(Math.max(step - 15, 0));
  }

  // On a narrow screen the picture scrolls sideways: keep what the picture marks as its focus
  // (an element with data-focus) in view.
  function keepInView() {
    const stage = parts.stage;
    if (!stage || stage.scrollWidth <= stage.clientWidth + 2) return;
    const ptr = stage.querySelector("[data-focus]");
    if (!ptr) return;
    const left = ptr.getBoundingClientRect().left - stage.getBoundingClientRect().left;
    if (left < 40 || left > stage.clientWidth - 90) stage.scrollLeft += left - stage.clientWidth / 3;
  }

  // A step's words that would overflow their column (big type, many notes) fit it: first the
  // simulation's notes fold into their summary line (a click opens them), then the words shrink
  // together, never below 12 px, so the narration and "what to notice" stay in view.
  function fitSide() {
    const side = parts.side;
    if (!side) return;
    side.style.removeProperty("--side-scale");
    if (!root.classList.contains("fit") || side.scrollHeight <= side.clientHeight + 1) return;
    side.querySelectorAll("details.step-notes[open]").forEach((d) => { d.open = false; });
    if (side.scrollHeight <= side.clientHeight + 1) return;
    const px = parseFloat(getComputedStyle(side).fontSize) || 16;
    const floor = Math.min(1, 12 / px);
    let scale = 1;
    while (scale > floor && side.scrollHeight > side.clientHeight + 1) {
      scale = Math.max(floor, scale - 0.05);
      side.style.setProperty("--side-scale", scale.toFixed(2));
    }
  }

  // On a phone a picture wider than the screen is drawn to the width (--pic-zoom, set on the
  // player, scales the stage's children), unless the reader pressed the zoom button: then it is drawn at full
  // size and the box scrolls sideways, keeping the step's focus in view.
  const phone = window.matchMedia ? window.matchMedia("(max-width: 700px)") : null;
  function fitPicture() {
    const st = parts.stage;
    if (!st) return;
    root.style.removeProperty("--pic-zoom");
    root.classList.remove("pic-fitted", "pic-fit");
    if (!phone || !phone.matches || root.classList.contains("zoomed") || root.dataset.embed === "1") return;
    const room = st.clientWidth;
    if (!room || st.scrollWidth <= room + 2) return;
    // first let the SVG pictures scale to the width, then zoom whatever is still wider
    root.classList.add("pic-fit", "pic-fitted");
    const natural = st.scrollWidth;
    if (natural > room + 2) root.style.setProperty("--pic-zoom", (room / natural).toFixed(4));
  }
  // On a projector (the projector theme) and in an embed the picture is the thing: it is
  // drawn big enough that its smallest text is TYPE_FLOOR px on screen, and the picture box
  // scrolls to the region the step is about (the element the picture marks data-focus).
  const TYPE_FLOOR = 16;
  function smallestText(st) {
    let min = Infinity;
    for (const t of st.querySelectorAll("svg text")) {
      if (!t.textContent || !t.textContent.trim()) continue;
      const r = t.getBoundingClientRect();
      if (!r.width || !r.height) continue;
      const m = t.getScreenCTM();
      if (!m) continue;
      const px = parseFloat(getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b);
      if (px > 0 && px < min) min = px;
    }
    return min;
  }
  function bigPicture() {
    return root.dataset.embed === "1" || document.documentElement.dataset.theme === "projector";
  }
  function bigType() {
    const st = parts.stage;
    const was = root.classList.contains("pic-zoomed");
    root.classList.remove("pic-zoomed");
    root.style.removeProperty("--pic-w");
    delete root.dataset.picZoom;
    if (!st || !bigPicture() || (phone && phone.matches && root.dataset.embed !== "1")) return;
    if (document.body.classList.contains("offline")) return; // the offline file keeps its page
    const svg = st.querySelector(":scope > svg");
    if (!svg) return;
    const min = smallestText(st);
    if (!isFinite(min) || min >= TYPE_FLOOR - 0.05) return;
    const z = Math.min(TYPE_FLOOR / min, 4);
    root.style.setProperty("--pic-w", Math.ceil(svg.getBoundingClientRect().width * z * 100) / 100 + "px");
    root.classList.add("pic-zoomed");
    root.dataset.picZoom = z.toFixed(3); // how much bigger than drawn to fit (tests read it)
    if (!was) root.dispatchEvent(new CustomEvent("stepscope:zoomed", { bubbles: true }));
  }
  // Centre the step's focus in every box that scrolls between it and the picture box.
  function showFocus() {
    const st = parts.stage;
    if (!st || !root.classList.contains("pic-zoomed")) return;
    const wrap = st.closest(".stage-wrap");
    const target = st.querySelector("[data-focus]");
    const boxes = [];
    for (let el = st; el; el = el.parentElement) {
      boxes.push(el);
      if (el === wrap) break;
    }
    for (const box of boxes) {
      if (!target) { box.scrollLeft = 0; box.scrollTop = 0; continue; }
      const t = target.getBoundingClientRect();
      const b = box.getBoundingClientRect();
      if (box.scrollWidth > box.clientWidth + 1) box.scrollLeft += (t.left + t.right) / 2 - (b.left + b.right) / 2;
      if (box.scrollHeight > box.clientHeight + 1) box.scrollTop += (t.top + t.bottom) / 2 - (b.top + b.bottom) / 2;
    }
  }

  function toggleZoom() {
    const on = root.classList.toggle("zoomed");
    const btn = $("btn-zoom");
    if (btn) btn.setAttribute("aria-pressed", on ? "true" : "false");
    fitPicture();
    keepInView();
  }

  function render(n) {
    const tpl = $("frame-" + n);
    if (!tpl) {
      root.classList.add("loading");
      ensure(n).then(() => {
        root.classList.remove("loading");
        if (step === n && $("frame-" + n)) render(n);
      });
      return;
    }
    for (const [name, el] of Object.entries(parts)) {
      const src = tpl.content.querySelector('[data-part="' + name + '"]');
      if (src) morph(el, src.innerHTML);
    }
    fitPicture();
    bigType();
    fitSide();
    keepInView(); // before "rendered": its listeners see the stage where it will stay
    showFocus();
    document.dispatchEvent(new CustomEvent("stepscope:rendered", { detail: { step: n, count } }));
    prefetch();
  }

  function setHref(id, n) {
    const a = $(id);
    if (!a) return;
    const url = new URL(window.location.href);
    url.searchParams.set("step", String(n));
    a.setAttribute("href", url.pathname + url.search);
  }

  function sync(history) {
    root.dataset.step = String(step);
    const no = $("step-no");
    if (no) no.textContent = String(step);
    const scrub = $("scrubber");
    if (scrub && String(scrub.value) !== String(step)) scrub.value = String(step);
    setHref("btn-prev", Math.max(step - 1, 0));
    setHref("btn-next", Math.min(step + 1, count - 1));
    setHref("btn-first", 0);
    setHref("btn-last", count - 1);
    if (history) {
      const url = new URL(window.location.href);
      url.searchParams.set("step", String(step));
      // In an iframe, pushed entries would hijack the host page's Back button.
      if (root.dataset.embed === "1") history = "replace";
      try {
        if (history === "push") window.history.pushState({ step }, "", url);
        else window.history.replaceState({ step }, "", url);
      } catch (e) { /* file:// (offline export) may refuse URL changes; stepping still works */ }
    }
    document.dispatchEvent(new CustomEvent("stepscope:step", { detail: { step, count } }));
  }

  function goto(n, history) {
    if (count === 0) return false;
    const target = Math.max(0, Math.min(count - 1, n | 0));
    if (target === step) {
      sync(null);
      return false;
    }
    step = target;
    render(step);
    sync(history === undefined ? "push" : history);
    return true;
  }

  // The play button's words come from data attributes the template fills in the page's language.
  function setPlayLabel(btn, which) {
    const text = btn.dataset[which] || which;
    const icon = document.createElement("span");
    icon.className = "play-icon";
    icon.setAttribute("aria-hidden", "true");
    icon.textContent = text;
    btn.replaceChildren(icon);
    btn.setAttribute("aria-label", text);
  }

  function interval() {
    const sel = $("speed");
    const speed = sel ? parseFloat(sel.value) : 1;
    return Math.round(1400 / (speed || 1));
  }

  function play() {
    if (timer || count < 2) return;
    if (step >= count - 1) goto(0, "replace");
    const btn = $("btn-play");
    if (btn) { setPlayLabel(btn, "pause"); }
    root.classList.add("playing");
    timer = window.setInterval(() => {
      if (step >= count - 1) { pause(); return; }
      goto(step + 1, "replace");
    }, interval());
  }

  function pause() {
    if (timer) window.clearInterval(timer);
    timer = null;
    root.classList.remove("playing");
    const btn = $("btn-play");
    if (btn) { setPlayLabel(btn, "play"); }
  }

  function toggle() { timer ? pause() : play(); }

  function changeSpeed(delta) {
    const sel = $("speed");
    if (!sel) return;
    const i = speeds.indexOf(parseFloat(sel.value));
    const j = Math.max(0, Math.min(speeds.length - 1, (i < 0 ? 1 : i) + delta));
    sel.value = String(speeds[j]);
    if (timer) { pause(); play(); }
  }

  function clickTo(id, fn) {
    const el = $(id);
    if (!el) return;
    el.addEventListener("click", (ev) => { ev.preventDefault(); fn(); });
  }
  clickTo("btn-first", () => { pause(); goto(0); });
  clickTo("btn-prev", () => { pause(); goto(step - 1); });
  clickTo("btn-next", () => { pause(); goto(step + 1); });
  clickTo("btn-last", () => { pause(); goto(count - 1); });
  clickTo("btn-play", toggle);
  clickTo("btn-zoom", toggleZoom);
  clickTo("btn-help", () => { const d = $("keymap"); if (d && d.showModal) d.showModal(); });
  const speedSel = $("speed");
  if (speedSel) speedSel.addEventListener("change", () => { if (timer) { pause(); play(); } });
  const scrub = $("scrubber");
  if (scrub) {
    scrub.addEventListener("input", () => { pause(); goto(parseInt(scrub.value, 10), "replace"); });
    scrub.addEventListener("change", () => sync("replace"));
  }
  document.querySelectorAll(".marks .mark").forEach((m) => {
    m.addEventListener("click", () => { pause(); goto(parseInt(m.dataset.step, 10)); });
  });

  const STEP_KEYS = { ArrowRight: 1, ArrowLeft: -1, PageDown: 1, PageUp: -1 };
  // Keys: a handler may decline (return false) so an embedding page can take the key instead.
  function onKey(ev) {
    if (ev.defaultPrevented || ev.altKey || ev.ctrlKey || ev.metaKey) return;
    const t = ev.target;
    const tag = t && t.tagName ? t.tagName.toLowerCase() : "";
    if (ev.key === "Escape") {
      document.querySelectorAll("details.action-menu[open]").forEach((d) => { d.open = false; });
      return;
    }
    // A clicker (or →) on the walkthrough picker still steps: a closed <select> would take
    // the arrow and open the next walkthrough at step 0.
    if (tag === "select" && t.hasAttribute("data-navigate") && STEP_KEYS[ev.key] !== undefined) {
      ev.preventDefault();
      t.blur();
      pause();
      goto(step + STEP_KEYS[ev.key]);
      return;
    }
    const isRange = tag === "input" && t.type === "range";
    if (isRange && (ev.key === " " || ev.key === "Spacebar")) { ev.preventDefault(); toggle(); return; }
    if (tag === "input" || tag === "textarea" || tag === "select" || (t && t.isContentEditable)) return;
    let handled = true;
    switch (ev.key) {
      case "ArrowRight": case "PageDown": pause(); goto(step + 1); break; // PageDown: a clicker
      case "ArrowLeft": case "PageUp": pause(); goto(step - 1); break;
      case "Home": pause(); goto(0); break;
      case "End": pause(); goto(count - 1); break;
      case " ": case "Spacebar": toggle(); break;
      case "[": changeSpeed(-1); break;
      case "]": changeSpeed(1); break;
      case "?": { const d = $("keymap"); if (d && d.showModal && !d.open) d.showModal(); break; }
      default: handled = false;
    }
    if (handled) ev.preventDefault();
  }
  document.addEventListener("keydown", onKey);

  // Share / Embed / Export menus: opening one closes the others.
  document.querySelectorAll("details.action-menu").forEach((menu) => {
    menu.addEventListener("toggle", () => {
      if (!menu.open) return;
      document.querySelectorAll("details.action-menu[open]").forEach((d) => { if (d !== menu) d.open = false; });
    });
  });
  // The lesson intro starts open at step 0 on a big screen when it fits beside the step's own
  // words (folded on a phone, or where even the shrunk words would not fit beside it), and
  // folds again once the reader steps on, unless they opened it themselves.
  let intro = document.querySelector(".lesson-intro[open]");
  if (intro && window.matchMedia && window.matchMedia("(max-width: 700px)").matches) intro.open = false;
  function introCrowds() {
    const side = parts.side;
    return !!side && side.scrollHeight > side.clientHeight + 1;
  }
  if (intro && intro.open) {
    const summary = intro.querySelector("summary");
    if (summary) summary.addEventListener("click", () => { intro = null; }); // the reader decides
    document.addEventListener("stepscope:step", function fold(ev) {
      if (ev.detail.step === 0) return;
      document.removeEventListener("stepscope:step", fold);
      if (intro) intro.open = false;
    });
  }

  window.addEventListener("popstate", () => {
    const n = parseInt(new URL(window.location.href).searchParams.get("step") || "0", 10);
    pause();
    goto(isNaN(n) ? 0 : n, null);
  });

  // The fields table folds where the picture needs the room (a phone, the projector theme, an
  // embed) and opens again on a big screen, unless the reader opened or closed it themselves.
  const fold = document.getElementById("fields-fold");
  let foldChosen = false;
  if (fold) {
    const sum = fold.querySelector("summary");
    if (sum) sum.addEventListener("click", () => { foldChosen = true; });
  }
  function foldSecondary() {
    if (!fold || foldChosen) return;
    const cramped = (phone && phone.matches) || root.dataset.embed === "1"
      || document.documentElement.dataset.theme === "projector";
    fold.open = !cramped;
  }

  // One step on one screen (static/css/app.css): the picture box and the side column take at
  // most the height left under the page head once the controls have their row (--fit-h). On a
  // narrow screen the picture box leaves room for the controls and the start of the narration.
  // The offline export keeps its plain scrolling page.
  const body = root.querySelector(".player-body");
  function fit() {
    if (!body || document.body.classList.contains("offline")) return;
    const ctl = body.querySelector(":scope > .controls");
    const ctlH = ctl && ctl.offsetParent !== null ? ctl.getBoundingClientRect().height : 0;
    const gap = parseFloat(getComputedStyle(body).rowGap) || 0;
    const vh = window.innerHeight;
    if (!vh || !body.getClientRects().length) return; // not shown yet (a hidden iframe)
    foldSecondary();
    const narrow = window.matchMedia("(max-width: 900px)").matches && root.dataset.embed !== "1";
    let h;
    if (narrow) {
      // the picture box, the controls and the start of the narration share one screen
      const col = body.querySelector(":scope > .side-col");
      const words = parts.side && parts.side.querySelector(".narration");
      const rem = parseFloat(getComputedStyle(document.documentElement).fontSize) || 16;
      const lead = col && words ? words.getBoundingClientRect().top - col.getBoundingClientRect().top : 4 * rem;
      const top = body.getBoundingClientRect().top + window.scrollY;
      // at scroll 0: the page head, the picture box, the controls and ~6 lines of narration
      h = vh - top - ctlH - 2 * gap - lead - 8 * rem;
    } else {
      const top = body.getBoundingClientRect().top + window.scrollY;
      const main = body.closest("main");
      const pad = main ? parseFloat(getComputedStyle(main).paddingBottom) || 0 : 0;
      h = vh - top - ctlH - gap - Math.min(pad, 12);
    }
    h = Math.max(Math.floor(h), Math.min(narrow ? 200 : 320, vh));
    root.style.setProperty("--fit-h", h + "px");
    root.classList.add("fit");
    fitPicture();
    bigType();
    showFocus();
    fitSide();
    // the lesson intro stays open at step 0 unless the step's words cannot fit beside it even
    // with their notes folded and their type at its floor
    if (intro && intro.open && introCrowds()) { intro.open = false; fitSide(); }
    document.dispatchEvent(new CustomEvent("stepscope:fit", { detail: { height: h } }));
  }
  fit();
  let fitTimer = null;
  window.addEventListener("resize", () => {
    window.clearTimeout(fitTimer);
    fitTimer = window.setTimeout(fit, 60);
  });
  if (document.fonts && document.fonts.ready) document.fonts.ready.then(fit);
  new MutationObserver(fit).observe(document.documentElement, { attributes: true, attributeFilter: ["data-theme"] });

  window.Stepscope = {
    goto: (n, history) => goto(n, history),  // history: "push" (default) or "replace"
    next: () => goto(step + 1),
    prev: () => goto(step - 1),
    play, pause,
    get step() { return step; },
    get count() { return count; },
    fit,
  };
  sync(null);
  keepInView();
  // Autoplay waits for a click when the reader asked for reduced motion.
  const calm = window.matchMedia && window.matchMedia("(prefers-reduced-motion: reduce)").matches;
  if (root.dataset.autoplay === "1" && !calm) play();
})();
