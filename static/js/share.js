// Share / Embed / Export menus of the player, and "continue where you left off" progress.
// - Share: POST /api/v1/scenarios, then show the /s/{id} link (with ?step=N) and copy it.
// - Embed: builds an <iframe> snippet for the current step with the chosen controls and theme.
// - Export: keeps the SVG/PNG links pointing at the step on screen. The PNG is drawn on the
//   server in a headless browser (seconds): a click fetches it while the menu shows a bar, the
//   seconds so far and a status line (read out at start and end), then saves it. Without
//   JavaScript, or with a modified click, the link downloads it as a plain link.
// - Progress: reports the shown step of a preset or shared walkthrough (debounced); the server
//   ignores it when the browser keeps no session cookie.
(function () {
  "use strict";
  const $ = (id) => document.getElementById(id);
  const player = $("player");
  if (!player) return;
  const FORK_KEY = "stepscope:forked_from";
  let step = parseInt(player.dataset.step || "0", 10);
  // Words come from the page's #i18n-strings JSON (in the page's language); {name} is filled in.
  const STRINGS = (() => { try { return JSON.parse(document.getElementById("i18n-strings").textContent); } catch (e) { return {}; } })();
  function t(key, vars) {
    return String(STRINGS[key] || key).replace(/\{(\w+)\}/g, (m, k) => (vars && k in vars ? String(vars[k]) : m));
  }

  function status(msg) { const s = $("share-status"); if (s) s.textContent = msg; }

  function withStep(url) {
    const u = new URL(url, window.location.href);
    if (step > 0) u.searchParams.set("step", String(step)); else u.searchParams.delete("step");
    return u.toString();
  }

  async function copy(text, okMsg) {
    try {
      await navigator.clipboard.writeText(text);
      status(okMsg);
      return true;
    } catch (e) {
      // No clipboard permission (e.g. plain http on a LAN address): select it for Ctrl+C instead.
      const input = $("share-url");
      if (input && input.value === text) { input.focus(); input.select(); }
      try { if (document.execCommand("copy")) { status(okMsg); return true; } } catch (e2) { /* ignore */ }
      status(t("copy_hint"));
      return false;
    }
  }

  // --- Share ---------------------------------------------------------------------------------
  const result = $("share-result");
  function showLink(base) {
    if (!result) return;
    result.dataset.base = base;
    result.hidden = false;
    const input = $("share-url");
    if (input) input.value = withStep(base);
  }
  if (result && result.dataset.base) showLink(result.dataset.base);

  const form = $("share-form");
  if (form) {
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const paramsEl = $("share-params");
      const body = {
        explainer: form.dataset.explainer,
        params: JSON.parse(paramsEl ? paramsEl.textContent : "null"),
        title: ($("share-title") || {}).value || null,
      };
      try {
        const fork = JSON.parse(window.sessionStorage.getItem(FORK_KEY) || "null");
        if (fork && fork.explainer === body.explainer) body.forked_from = fork.id;
      } catch (e) { /* storage off: no fork link, nothing else changes */ }
      status(t("saving"));
      let res;
      try {
        res = await fetch("/api/v1/scenarios", {
          method: "POST", credentials: "same-origin",
          headers: { "Content-Type": "application/json", "Accept": "application/json", "Accept-Language": STRINGS.lang || "en" },
          body: JSON.stringify(body),
        });
      } catch (e) { status(t("unreachable")); return; }
      const data = await res.json().catch(() => ({}));
      if (res.status !== 201) {
        const issues = Array.isArray(data.detail) ? data.detail.map((d) => (d.loc || []).slice(1).join(".") + ": " + d.msg) : [String(data.detail || res.status)];
        status(t("not_saved", { issues: issues.join("; ") }));
        return;
      }
      try { window.sessionStorage.removeItem(FORK_KEY); } catch (e) { /* ignore */ }
      form.hidden = true;
      showLink(data.share_url || new URL(data.url, window.location.href).toString());
      setEmbedPath(data.embed_url);
      player.dataset.shared = data.id;
      await copy($("share-url").value, t("link_copied"));
    });
  }
  const copyBtn = $("share-copy");
  if (copyBtn) copyBtn.addEventListener("click", () => copy($("share-url").value, t("link_copied")));

  // Fork: remember which scenario the edited copy came from (sent when it is shared).
  const forkLink = $("fork-link");
  if (forkLink) {
    forkLink.addEventListener("click", () => {
      try {
        window.sessionStorage.setItem(FORK_KEY, JSON.stringify({ id: forkLink.dataset.scenario, explainer: forkLink.dataset.explainer }));
      } catch (e) { /* ignore */ }
    });
  }

  // --- Embed ---------------------------------------------------------------------------------
  const ready = $("embed-ready");
  function setEmbedPath(path) {
    if (!ready || !path) return;
    ready.dataset.path = path;
    ready.hidden = false;
    const hint = $("embed-hint");
    if (hint) hint.hidden = true;
    updateEmbed();
  }
  function updateEmbed() {
    if (!ready || !ready.dataset.path) return;
    const u = new URL(ready.dataset.path, window.location.href);
    u.searchParams.set("controls", ($("embed-controls") || {}).value || "min");
    u.searchParams.set("theme", ($("embed-theme") || {}).value || "light");
    if (step > 0) u.searchParams.set("step", String(step));
    if (STRINGS.lang) u.searchParams.set("lang", STRINGS.lang);  // the embed speaks the page's language
    const code = '<iframe src="' + u.toString() + '" width="960" height="600" style="border:0" ' +
      'allow="clipboard-write" title="' + (document.title || "Stepscope").replace(/"/g, "&quot;") + '"></iframe>';
    const ta = $("embed-code");
    if (ta) ta.value = code;
  }
  ["embed-controls", "embed-theme"].forEach((id) => { const el = $(id); if (el) el.addEventListener("change", updateEmbed); });
  const embedCopy = $("embed-copy");
  if (embedCopy) embedCopy.addEventListener("click", () => {
    const ta = $("embed-code");
    navigator.clipboard.writeText(ta.value).then(() => status(t("embed_copied")), () => { ta.focus(); ta.select(); });
  });
  updateEmbed();

  // --- Export --------------------------------------------------------------------------------
  // A picture export (SVG, PNG) is drawn in the theme the reader sees (light, dark, projector).
  function updateExports() {
    const theme = document.documentElement.dataset.theme || "light";
    document.querySelectorAll("a[data-export]").forEach((a) => {
      const u = new URL(a.getAttribute("href"), window.location.href);
      u.searchParams.set("step", String(step));
      u.searchParams.set("theme", theme);
      a.setAttribute("href", u.pathname + u.search);
    });
  }
  new MutationObserver(updateExports).observe(document.documentElement, { attributes: true, attributeFilter: ["data-theme"] });
  updateExports();

  const png = document.querySelector('a[data-export="png"]');
  const pngStatus = $("export-status");
  const pngProgress = $("export-progress");
  function fill(template, vars) {
    return String(template || "").replace(/\{(\w+)\}/g, (m, k) => (k in vars ? String(vars[k]) : m));
  }
  function pngSay(key, vars) { if (pngStatus) pngStatus.textContent = fill(pngStatus.dataset[key], vars); }
  function filenameOf(res, fallback) {
    const m = /filename="?([^";]+)"?/.exec(res.headers.get("Content-Disposition") || "");
    return m ? m[1] : fallback;
  }
  async function downloadPng(ev) {
    if (ev.button !== 0 || ev.ctrlKey || ev.metaKey || ev.shiftKey || ev.altKey) return;
    ev.preventDefault();
    if (png.getAttribute("aria-busy") === "true") return;  // one at a time
    const href = png.getAttribute("href");
    const shown = new URL(href, window.location.href).searchParams.get("step") || "0";
    png.setAttribute("aria-busy", "true");
    png.setAttribute("aria-disabled", "true");
    if (pngProgress) pngProgress.hidden = false;
    const elapsed = $("export-elapsed");
    const started = Date.now();
    const tick = window.setInterval(() => {
      if (elapsed) elapsed.textContent = Math.round((Date.now() - started) / 1000) + " s";
    }, 500);
    if (elapsed) elapsed.textContent = "0 s";
    pngSay("drawing", { step: shown });
    try {
      const res = await fetch(href, { credentials: "same-origin" });
      if (!res.ok) {
        const data = await res.json().catch(() => ({}));
        const detail = Array.isArray(data.detail) ? data.detail.map((d) => d.msg).join("; ") : data.detail;
        throw new Error(String(detail || res.status + " " + res.statusText));
      }
      const blob = await res.blob();
      const name = filenameOf(res, "stepscope-step" + shown + ".png");
      const url = URL.createObjectURL(blob);
      const a = document.createElement("a");
      a.href = url;
      a.download = name;
      a.hidden = true;
      document.body.appendChild(a);
      a.click();
      a.remove();
      window.setTimeout(() => URL.revokeObjectURL(url), 60000);
      player.dataset.pngSaved = name;
      pngSay("done", { step: shown, name });
    } catch (e) {
      pngSay("failed", { reason: e && e.message ? e.message : String(e) });
    } finally {
      window.clearInterval(tick);
      if (pngProgress) pngProgress.hidden = true;
      png.removeAttribute("aria-busy");
      png.removeAttribute("aria-disabled");
    }
  }
  if (png && window.fetch && window.URL && URL.createObjectURL) png.addEventListener("click", downloadPng);

  // --- Progress ------------------------------------------------------------------------------
  const walkthrough = player.dataset.walkthrough || "";
  let first = true;
  let pending = null;
  // progressSaved names the step the server took (not the step shown when it answered).
  function send() {
    pending = null;
    const sent = step;
    fetch("/api/v1/progress", {
      method: "POST", credentials: "same-origin", keepalive: true,
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ walkthrough, step: sent }),
    }).then((r) => { player.dataset.progressSaved = r.ok ? String(sent) : "error"; }, () => {});
  }
  function report() {
    if (!walkthrough || player.dataset.embed === "1") return;
    if (pending) window.clearTimeout(pending);
    pending = window.setTimeout(send, 400);
  }
  // A reader who steps and leaves within the 400 ms still has that step saved (keepalive).
  window.addEventListener("pagehide", () => {
    if (pending) { window.clearTimeout(pending); send(); }
  });

  document.addEventListener("stepscope:step", (ev) => {
    step = ev.detail.step;
    if (result && result.dataset.base) showLink(result.dataset.base);
    updateEmbed();
    updateExports();
    // The load-time announcement is not progress: it would overwrite "continue at step N".
    if (first) { first = false; return; }
    report();
  });
  first = !window.Stepscope; // player.js already announced the load step before this ran
  // A link that opens a step (?step=N, e.g. from the step list or a lecturer's slide) is a
  // place the reader reached: "continue where you left off" offers it.
  if (!first && step > 0 && new URL(window.location.href).searchParams.has("step")) report();
})();
