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
    document.querySelectorAll("select[data-navigate]").forEach(function (select) {
      select.addEventListener("change", function () {
        if (select.value) location.href = select.value;
      });
    });
  });
})();
