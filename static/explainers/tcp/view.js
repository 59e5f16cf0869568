// The TCP picture's RFC / Linux switch. The picture draws both vocabularies and its own two
// buttons (elements with data-tcp-view); this sets <html data-tcp-view="rfc|linux"> (the
// picture's <style> shows one) and remembers the choice in localStorage. Default: RFC.
(function () {
  "use strict";
  const KEY = "stepscope.tcp.view";
  const root = document.documentElement;
  function saved() {
    try { return window.localStorage.getItem(KEY) === "linux" ? "linux" : "rfc"; } catch (e) { return "rfc"; }
  }
  function mark() {
    const view = root.dataset.tcpView || "rfc";
    document.querySelectorAll("#stage [data-tcp-view]").forEach((b) => {
      b.setAttribute("aria-pressed", b.getAttribute("data-tcp-view") === view ? "true" : "false");
    });
  }
  function apply(view, store) {
    root.dataset.tcpView = view;
    if (store) { try { window.localStorage.setItem(KEY, view); } catch (e) { /* private mode */ } }
    mark();
  }
  document.addEventListener("click", (ev) => {
    const t = ev.target && ev.target.closest ? ev.target.closest("[data-tcp-view]") : null;
    if (!t || !t.closest(".tcp-svg")) return;
    ev.preventDefault();
    apply(t.getAttribute("data-tcp-view"), true);
  });
  document.addEventListener("stepscope:rendered", mark);
  apply(saved(), false);
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", mark);
})();
