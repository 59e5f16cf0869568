// packetdrill page: step through the script's lines (←/→, the buttons), keep the step in the
// URL, and read an uploaded .pkt file into the script box (at most data-max-bytes).
(function () {
  "use strict";
  function init() {
    var steps = Array.prototype.slice.call(document.querySelectorAll(".pd-step"));
    var pos = document.getElementById("pd-pos");
    var current = 0;
    function show(i) {
      if (!steps.length) return;
      current = Math.max(0, Math.min(steps.length - 1, i));
      steps.forEach(function (s, k) { s.hidden = k !== current; });
      document.querySelectorAll(".pd-source li.current").forEach(function (li) {
        li.classList.remove("current");
      });
      var step = steps[current];
      var li = document.getElementById("pd-line-" + step.dataset.line);
      if (li) {
        li.classList.add("current");
        li.scrollIntoView({ block: "nearest" });
      }
      if (pos) pos.textContent = (current + 1) + " / " + steps.length;
      var url = new URL(window.location.href);
      url.searchParams.set("step", String(current + 1));
      window.history.replaceState(null, "", url);
    }
    steps.forEach(function (s) {
      var li = document.getElementById("pd-line-" + s.dataset.line);
      if (li) li.classList.add("status-" + s.dataset.status);
    });
    var prev = document.getElementById("pd-prev");
    var next = document.getElementById("pd-next");
    if (prev) prev.addEventListener("click", function () { show(current - 1); });
    if (next) next.addEventListener("click", function () { show(current + 1); });
    document.addEventListener("keydown", function (e) {
      var tag = (e.target && e.target.tagName) || "";
      if (tag === "TEXTAREA" || tag === "INPUT") return;
      if (e.key === "ArrowRight") { show(current + 1); e.preventDefault(); }
      if (e.key === "ArrowLeft") { show(current - 1); e.preventDefault(); }
      if (e.key === "Home") { show(0); e.preventDefault(); }
      if (e.key === "End") { show(steps.length - 1); e.preventDefault(); }
    });
    var start = parseInt(new URL(window.location.href).searchParams.get("step") || "1", 10);
    show(isNaN(start) ? 0 : start - 1);
    var copy = document.getElementById("pd-embed-copy");
    var code = document.getElementById("pd-embed-code");
    var said = document.getElementById("pd-embed-status");
    if (copy && code) {
      copy.addEventListener("click", function () {
        var done = function () { if (said) said.textContent = copy.dataset.done || ""; };
        var manual = function () { code.focus(); code.select(); };
        if (navigator.clipboard) navigator.clipboard.writeText(code.value).then(done, manual);
        else manual();
      });
    }
    var file = document.getElementById("pd-file");
    var box = document.getElementById("pd-script");
    var err = document.getElementById("pd-file-error");
    if (file && box) {
      file.addEventListener("change", function () {
        var f = file.files && file.files[0];
        if (!f) return;
        var max = parseInt(box.dataset.maxBytes || "65536", 10);
        if (f.size > max) { if (err) err.hidden = false; file.value = ""; return; }
        if (err) err.hidden = true;
        f.text().then(function (t) { box.value = t; });
      });
    }
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
