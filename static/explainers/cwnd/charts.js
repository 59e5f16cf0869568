// Draws every Plotly figure the server left as JSON (see app/web/charts.py), once Plotly and
// the DOM are ready, then announces "stepscope:charts-ready" so the cursor can attach.
(function () {
  "use strict";
  const CONFIG = { responsive: true, displaylogo: false };
  function draw(root) {
    if (!window.Plotly) return Promise.resolve();
    const pending = Array.from((root || document).querySelectorAll(".plotly-pending"));
    return Promise.all(pending.map((el) => {
      const src = document.getElementById(el.dataset.figure);
      if (!src) return null;
      el.classList.remove("plotly-pending");
      el.textContent = "";
      let fig;
      try { fig = JSON.parse(src.textContent); } catch (e) { return null; }
      return window.Plotly.newPlot(el, fig.data, fig.layout, CONFIG);
    })).then(() => {
      document.dispatchEvent(new CustomEvent("stepscope:charts-ready"));
    });
  }
  window.StepscopeCharts = { draw };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", () => draw());
  else draw();
  // htmx swaps (compare mode) bring new figures
  document.addEventListener("htmx:afterSettle", (ev) => draw(ev.target));
})();
