// Compare mode: one time cursor drives the cursor line on every chart; ←/→ nudge it.
(function () {
  "use strict";
  const slider = document.getElementById("time-cursor");
  const out = document.getElementById("time-out");
  const form = document.querySelector(".compare-form");
  if (form) {
    form.addEventListener("submit", () => {
      const picked = Array.from(form.querySelectorAll(".algo:checked")).map((c) => c.value);
      form.querySelector("input[name=algos]").value = picked.join(",");
    });
  }
  if (!slider) return;
  function move() {
    const t = parseFloat(slider.value);
    if (out) out.textContent = t.toFixed(2);
    if (!window.Plotly) return;
    document.querySelectorAll(".chart[data-cursor] .js-plotly-plot").forEach((el) => {
      window.Plotly.relayout(el, { "shapes[0].x0": t, "shapes[0].x1": t });
    });
  }
  slider.addEventListener("input", move);
  // Charts drawn before the grid settled (or before a scrollbar appeared) refit their boxes.
  window.addEventListener("load", () => {
    if (!window.Plotly) return;
    document.querySelectorAll(".js-plotly-plot").forEach((el) => window.Plotly.Plots.resize(el));
  });
  document.addEventListener("keydown", (ev) => {
    const tag = (ev.target && ev.target.tagName || "").toLowerCase();
    if (tag === "input" || tag === "select" || tag === "textarea") return;
    const step = (parseFloat(slider.max) || 1) / 200;
    if (ev.key === "ArrowRight") slider.value = String(Math.min(parseFloat(slider.max), parseFloat(slider.value) + step));
    else if (ev.key === "ArrowLeft") slider.value = String(Math.max(0, parseFloat(slider.value) - step));
    else return;
    ev.preventDefault();
    move();
  });
})();
