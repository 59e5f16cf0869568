// The reader's colour theme (light, dark, projector): applied before the first paint (this script
// is loaded synchronously in <head>), chosen with the header's picker, remembered in localStorage.
// Also: a <select data-navigate> opens the URL of the option chosen (the walkthrough picker), and
// the header's language links follow the URL as it is now (the player changes ?step= as you go),
// so switching language mid-walkthrough lands on the same step.
(function () {
  "use strict";
  const root = document.documentElement;
  try {
    const saved = localStorage.getItem("stepscope-theme");
    if (saved) root.dataset.theme = saved;
  } catch (e) { /* storage off: keep the page's theme */ }
  document.addEventListener("DOMContentLoaded", function () {
    const picker = document.getElementById("theme-picker");
    if (picker) {
      picker.value = root.dataset.theme || "light";
      picker.addEventListener("change", function () {
        root.dataset.theme = picker.value;
        try { localStorage.setItem("stepscope-theme", picker.value); } catch (e) { /* ignore */ }
      });
    }
    document.querySelectorAll("a[data-lang-switch]").forEach(function (link) {
      link.addEventListener("click", function (ev) {
        const url = new URL(window.location.href);
        url.searchParams.set("lang", link.dataset.langSwitch);
        ev.preventDefault();
        location.href = url.toString();
      });
    });
    // A glossary term's definition (drawn under it on focus or tap, app.css) stays inside the
    // screen: it shifts left by as much as it would run past the right edge.
    document.addEventListener("focusin", function (ev) {
      const term = ev.target;
      if (!term || !term.matches || !term.matches("abbr.term")) return;
      const rem = parseFloat(getComputedStyle(root).fontSize) || 16;
      const width = Math.min(22 * rem, 0.8 * window.innerWidth);
      const left = term.getBoundingClientRect().left;
      const room = document.documentElement.clientWidth - 8;
      let shift = Math.min(0, room - (left + width));
      if (left + shift < 8) shift = 8 - left;
      term.style.setProperty("--tip-shift", Math.round(shift) + "px");
    });
    document.querySelectorAll("select[data-navigate]").forEach(function (select) {
      select.addEventListener("change", function () {
        if (select.value) location.href = select.value;
      });
    });
  });
})();
