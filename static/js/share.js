// Share / Embed / Export menus of the player, and "continue where you left off" progress.
// - Share: POST /api/v1/scenarios, then show the /s/{id} link (with ?step=N) and copy it.
// - Embed: builds an <iframe> snippet for the current step with the chosen controls and theme.
// - Export: keeps the SVG/PNG links pointing at the step on screen.
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
  function updateExports() {
    document.querySelectorAll("a[data-export]").forEach((a) => {
      const u = new URL(a.getAttribute("href"), window.location.href);
      u.searchParams.set("step", String(step));
      a.setAttribute("href", u.pathname + u.search);
    });
  }

  // --- Progress ------------------------------------------------------------------------------
  const walkthrough = player.dataset.walkthrough || "";
  let first = true;
  let pending = null;
  function report() {
    if (!walkthrough || player.dataset.embed === "1") return;
    if (pending) window.clearTimeout(pending);
    pending = window.setTimeout(() => {
      pending = null;
      fetch("/api/v1/progress", {
        method: "POST", credentials: "same-origin", keepalive: true,
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ walkthrough, step }),
      }).then((r) => { player.dataset.progressSaved = r.ok ? String(step) : "error"; }, () => {});
    }, 400);
  }

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
})();
