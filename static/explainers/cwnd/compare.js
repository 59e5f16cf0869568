// Compare mode: one time cursor drives the cursor line on every chart; ←/→ nudge it.
// Listeners are delegated to the document so they survive htmx swapping the page body.
(function () {
  "use strict";
  function slider() { return document.getElementById("time-cursor"); }
  function move() {
    const s = slider();
    if (!s) return;
    const t = parseFloat(s.value);
    const out = document.getElementById("time-out");
    if (out) out.textContent = t.toFixed(2);
    if (window.StepscopeCursor) window.StepscopeCursor.move(t);
  }
  function resize() {
    if (window.StepscopeCursor) window.StepscopeCursor.wire();
    move();
  }
  document.addEventListener("submit", (ev) => {
    const form = ev.target.closest && ev.target.closest(".compare-form");
    if (!form) return;
    const picked = Array.from(form.querySelectorAll(".algo:checked")).map((c) => c.value);
    form.querySelector("input[name=algos]").value = picked.join(",");
  }, true);
  document.addEventListener("input", (ev) => { if (ev.target && ev.target.id === "time-cursor") move(); });
  document.addEventListener("keydown", (ev) => {
    const tag = ((ev.target && ev.target.tagName) || "").toLowerCase();
    if (tag === "input" || tag === "select" || tag === "textarea") return;
    const s = slider();
    if (!s) return;
    const step = (parseFloat(s.max) || 1) / 200;
    if (ev.key === "ArrowRight") s.value = String(Math.min(parseFloat(s.max), parseFloat(s.value) + step));
    else if (ev.key === "ArrowLeft") s.value = String(Math.max(0, parseFloat(s.value) - step));
    else return;
    ev.preventDefault();
    move();
  });
  // Charts drawn before the grid settled (or before a scrollbar appeared) refit their boxes.
  window.addEventListener("load", resize);
  document.addEventListener("htmx:afterSettle", resize);
  document.addEventListener("stepscope:charts-ready", resize);
})();
