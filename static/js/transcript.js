// The step list: follows the player (the current step is marked and scrolled into view),
// a click jumps to that step without reloading, and the kind filter hides the other steps.
(function () {
  "use strict";
  const list = document.getElementById("transcript");
  if (!list) return;
  const filter = document.getElementById("transcript-filter");
  function mark(step) {
    const old = list.querySelector('[aria-current="step"]');
    if (old) old.removeAttribute("aria-current");
    const item = list.querySelector('li[data-step="' + step + '"]');
    if (!item) return;
    item.setAttribute("aria-current", "step");
    const box = list.getBoundingClientRect();
    const r = item.getBoundingClientRect();
    if (r.top < box.top || r.bottom > box.bottom) list.scrollTop += r.top - box.top - box.height / 3;
  }
  document.addEventListener("stepscope:step", function (ev) { mark(ev.detail.step); });
  list.addEventListener("click", function (ev) {
    const link = ev.target.closest("a");
    const item = ev.target.closest("li[data-step]");
    if (!link || !item || !window.Stepscope) return;
    ev.preventDefault();
    window.Stepscope.goto(parseInt(item.dataset.step, 10));
  });
  if (filter) {
    filter.addEventListener("change", function () {
      list.querySelectorAll("li[data-kind]").forEach(function (li) {
        li.hidden = !!filter.value && li.dataset.kind !== filter.value;
      });
    });
  }
})();
