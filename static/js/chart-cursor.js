// Moves the time cursor on every chart marked data-cursor to the current step's time,
// and lets a click on a chart jump the stepper to the last step at or before that time.
(function () {
  "use strict";
  function frameTime(n) {
    const tpl = document.getElementById("frame-" + n);
    const t = tpl ? parseFloat(tpl.dataset.time) : NaN;
    return isNaN(t) ? null : t;
  }
  function charts() {
    return Array.from(document.querySelectorAll(".chart[data-cursor] .js-plotly-plot, .js-plotly-plot[data-cursor]"));
  }
  function move(t) {
    if (t === null || !window.Plotly) return;
    for (const el of charts()) {
      window.Plotly.relayout(el, { "shapes[0].x0": t, "shapes[0].x1": t });
    }
  }
  document.addEventListener("stepscope:step", (ev) => move(frameTime(ev.detail.step)));
  function stepAt(t) {
    const tpls = document.querySelectorAll(".frame-store template[data-time]");
    let best = 0;
    tpls.forEach((tpl) => {
      const ft = parseFloat(tpl.dataset.time);
      const n = parseInt(tpl.id.replace("frame-", ""), 10);
      if (!isNaN(ft) && ft <= t + 1e-9 && n > best) best = n;
    });
    return best;
  }
  function wire() {
    if (window.Plotly) document.querySelectorAll(".js-plotly-plot").forEach((el) => window.Plotly.Plots.resize(el));
    for (const el of charts()) {
      if (el.dataset.wired) continue;
      el.dataset.wired = "1";
      el.on && el.on("plotly_click", (data) => {
        if (!data || !data.points || !data.points.length || !window.Stepscope) return;
        window.Stepscope.goto(stepAt(Number(data.points[0].x)));
      });
    }
    const root = document.getElementById("player");
    if (root) move(frameTime(parseInt(root.dataset.step || "0", 10)));
  }
  if (document.readyState === "complete") wire();
  else window.addEventListener("load", wire);
})();
