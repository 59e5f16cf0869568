// The scheduler's step cursor: lights the current step's column on the timeline and the charts
// (hand-drawn SVG; each cursor rect carries its column origin and width, the page's
// .sched-static carries the frame → column maps).
(function () {
  "use strict";
  function cols(name) {
    const box = document.querySelector(".sched-static");
    if (!box) return [];
    try { return JSON.parse(box.dataset[name] || "[]"); } catch (e) { return []; }
  }
  function move(step) {
    const gantt = cols("frameCols");
    const chart = cols("chartCols");
    for (const rect of document.querySelectorAll(".sched-static .sched-cursor")) {
      const map = rect.closest(".sched-gantt") ? gantt : chart;
      const c = map[step];
      if (typeof c !== "number") continue;
      const x0 = parseFloat(rect.dataset.x0);
      const w = parseFloat(rect.dataset.colw);
      rect.setAttribute("x", String(x0 + c * w));
      rect.dataset.col = String(c);
    }
  }
  function current() {
    const root = document.getElementById("player");
    return root ? parseInt(root.dataset.step || "0", 10) : 0;
  }
  document.addEventListener("stepscope:step", (ev) => move(ev.detail.step));
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", () => move(current()));
  else move(current());
})();
// The Compare button opens the compare page for the walkthrough being played.
(function () {
  "use strict";
  function wire() {
    const a = document.getElementById("action-compare");
    const pick = document.querySelector(".preset-picker select");
    if (!a || !pick || !pick.value) return;
    const slug = pick.value.split("/").pop();
    if (slug) a.setAttribute("href", a.getAttribute("href").split("?")[0] + "?preset=" + encodeURIComponent(slug));
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", wire);
  else wire();
})();
