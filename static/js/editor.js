// The editor re-renders its form after every change (htmx swaps it); keep the reader's place:
// the focused field and the caret come back after the swap, so typing never goes to the body.
// A row button used from the keyboard leaves focus where the next keystroke makes sense: "+"
// on the new row's first field, "✕" on the row that took the removed one's place (or the Add
// button), ↑/↓ on the same button of the moved row.
(function () {
  "use strict";
  let saved = null;

  function esc(s) { return CSS.escape(s); }

  function rowAfter(action) {
    const m = /^(add|remove|up|down):(.+):(-?\d+)$/.exec(action || "");
    if (!m) return null;
    const i = parseInt(m[3], 10);
    return { verb: m[1], key: m[2], index: m[1] === "add" ? (i < 0 ? -1 : i + 1) : m[1] === "up" ? i - 1 : m[1] === "down" ? i + 1 : i };
  }

  document.addEventListener("htmx:beforeSwap", function (event) {
    if (!event.detail.target || event.detail.target.id !== "editor") return;
    const el = document.activeElement;
    if (!el || !el.name || !event.detail.target.contains(el)) { saved = null; return; }
    saved = { name: el.name, type: el.type, value: el.value, start: el.selectionStart, end: el.selectionEnd };
  });

  function target(form) {
    if (saved.name === "action") {
      const row = rowAfter(saved.value);
      if (row && row.verb === "add") {
        const rows = form.querySelectorAll('[id^="' + esc(row.key) + '-row-"]');
        const li = row.index < 0 ? rows[rows.length - 1] : form.querySelector("#" + esc(row.key + "-row-" + row.index));
        return li && li.querySelector("input:not([type=hidden]), select");
      }
      if (row && row.verb === "remove") {
        return form.querySelector('button[name="action"][value="remove:' + row.key + ":" + row.index + '"]') ||
          form.querySelector('button[name="action"][value="add:' + row.key + ':-1"]');
      }
      if (row) {
        const b = form.querySelector('button[name="action"][value="' + saved.value.replace(/-?\d+$/, String(row.index)) + '"]');
        return b && !b.disabled ? b : form.querySelector("#" + esc(row.key + "-row-" + row.index) + " select");
      }
      return form.querySelector('button[name="action"][value="' + esc(saved.value) + '"]');
    }
    return form.querySelector('[name="' + esc(saved.name) + '"]:not([type=hidden])');
  }

  document.addEventListener("htmx:afterSettle", function () {
    if (!saved) return;
    const form = document.getElementById("editor");
    const el = form && target(form);
    if (el) {
      el.focus();
      if (typeof saved.start === "number" && el.setSelectionRange && el.value === saved.value) {
        try { el.setSelectionRange(saved.start, saved.end); } catch (e) { /* not a text field */ }
      } else if (saved.type === "number" && el.type === "number") {
        // a number field has no selection API, and focus() leaves its caret at the start: set
        // the value again, which puts the caret at the end, where typing goes on
        const v = el.value;
        el.value = "";
        el.value = v;
      }
    }
    saved = null;
  });
})();
