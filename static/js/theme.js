// The reader's colour theme (light, dark, projector): applied before the first paint (this script
// is loaded synchronously in <head>), chosen with the header's picker, remembered in localStorage.
// Also: a <select data-navigate> opens the URL of the option chosen (the walkthrough picker).
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
    document.querySelectorAll("select[data-navigate]").forEach(function (select) {
      select.addEventListener("change", function () {
        if (select.value) location.href = select.value;
      });
    });
  });
})();
