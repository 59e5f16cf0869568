// The time cursor shared by every chart marked data-cursor. It is a thin HTML line laid over
// each plot and positioned from the x-axis scale, so moving it costs nothing (a Plotly relayout
// per step would redraw every trace). A click on a chart jumps the stepper to that time.
// Steps bunched in time zoom the chart to their stretch: the chart's box carries data-zoom
// (app/web/explainers/cwnd/charts.py zoom_windows: the windows and, per step, which one), and
// the x range changes (one relayout) only when a step is in another window than the last.
(function () {
  "use strict";
  let times = null;
  let current = null;
  function allTimes() {
    if (times === null) {
      const store = document.querySelector(".frame-store");
      try { times = JSON.parse((store && store.dataset.times) || "[]"); } catch (e) { times = []; }
    }
    return times;
  }
  function frameTime(n) {
    const t = allTimes()[n];
    return typeof t === "number" ? t : null;
  }
  function charts() {
    return Array.from(document.querySelectorAll(".chart[data-cursor] .js-plotly-plot"));
  }
  function place(el, t) {
    const full = el._fullLayout;
    if (!full || !full.xaxis || typeof full.xaxis.l2p !== "function") return;
    let line = el.querySelector(":scope > .cursor-line");
    if (!line) {
      line = document.createElement("div");
      line.className = "cursor-line";
      line.setAttribute("aria-hidden", "true");
      if (getComputedStyle(el).position === "static") el.style.position = "relative";
      el.appendChild(line);
    }
    const xa = full.xaxis;
    const size = full._size;
    const x = xa._offset + xa.l2p(t);
    const inside = x >= xa._offset - 1 && x <= xa._offset + xa._length + 1;
    line.style.left = x + "px";
    line.style.top = size.t + "px";
    line.style.height = Math.max(full.height - size.t - size.b, 0) + "px";
    line.style.display = inside ? "block" : "none";
    line.dataset.t = String(t);
  }
  function zoomOf(el) {
    const box = el.closest(".chart[data-zoom]");
    if (!box) return null;
    if (!box._zoom) {
      try { box._zoom = JSON.parse(box.dataset.zoom); } catch (e) { box._zoom = { steps: [] }; }
    }
    return box._zoom;
  }
  function zoom(n) {
    if (!window.Plotly || n === null || isNaN(n)) return;
    for (const el of charts()) {
      const z = zoomOf(el);
      if (!z || !el._fullLayout) continue;
      const k = typeof z.steps[n] === "number" ? z.steps[n] : -1;
      const key = String(k);
      if (el.dataset.zoomed === key) continue;  // same window as the last step: keep any user zoom
      el.dataset.zoomed = key;
      const range = k >= 0 && z.windows[k] ? z.windows[k] : z.full;
      if (range) window.Plotly.relayout(el, { "xaxis.range": range.slice() });
    }
  }
  function show(n) {
    zoom(n);
    move(frameTime(n));
  }
  function move(t) {
    if (t === null || t === undefined || isNaN(t)) return;
    current = t;
    for (const el of charts()) place(el, t);
  }
  function stepAt(t) {
    let best = 0;
    allTimes().forEach((ft, n) => { if (typeof ft === "number" && ft <= t + 1e-9) best = n; });
    return best;
  }
  function wire() {
    for (const el of charts()) {
      // refit only a chart whose box changed since it was drawn (a resize redraws every trace)
      const full = el._fullLayout;
      if (window.Plotly && full && Math.abs(el.clientWidth - full.width) > 1) {
        el.setAttribute("aria-busy", "true");
        Promise.resolve(window.Plotly.Plots.resize(el)).finally(() => el.removeAttribute("aria-busy"));
      }
      delete el.dataset.zoomed;  // (re)drawn at the whole run's range
      if (el.dataset.wired) continue;
      el.dataset.wired = "1";
      if (!el.on) continue;
      el.on("plotly_click", (data) => {
        if (!data || !data.points || !data.points.length || !window.Stepscope) return;
        window.Stepscope.goto(stepAt(Number(data.points[0].x)));
      });
      // zoom, pan and resize change the scale: put the line back where the time is
      el.on("plotly_afterplot", () => { if (current !== null) place(el, current); });
    }
    const root = document.getElementById("player");
    if (root) show(parseInt(root.dataset.step || "0", 10));
  }
  document.addEventListener("stepscope:step", (ev) => show(ev.detail.step));
  document.addEventListener("stepscope:charts-ready", wire);
  window.StepscopeCursor = { move, wire, zoom };
  if (document.readyState === "complete") wire();
  else window.addEventListener("load", wire);
})();
