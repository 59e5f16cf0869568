// The editor re-renders its form after every change (htmx swaps it); keep the reader's place:
// the focused field and the caret come back after the swap, so typing never goes to the body.
(function () {
  "use strict";
  let saved = null;
  document.addEventListener("htmx:beforeSwap", function (event) {
    if (!event.detail.target || event.detail.target.id !== "editor") return;
    const el = document.activeElement;
    if (!el || !el.name || !event.detail.target.contains(el)) { saved = null; return; }
    saved = { name: el.name, start: el.selectionStart, end: el.selectionEnd, value: el.value };
  });
  document.addEventListener("htmx:afterSettle", function () {
    if (!saved) return;
    const form = document.getElementById("editor");
    const el = form && form.querySelector('[name="' + CSS.escape(saved.name) + '"]');
    if (el) {
      el.focus();
      if (typeof saved.start === "number" && el.setSelectionRange && el.value === saved.value) {
        try { el.setSelectionRange(saved.start, saved.end); } catch (e) { /* not a text field */ }
      }
    }
    saved = null;
  });
})();
