// Follows a long simulation (a job): shows its progress, reloads the page when it is done.
(function () {
  "use strict";
  const root = document.getElementById("job");
  if (!root) return;
  const bar = document.getElementById("job-progress");
  const status = document.getElementById("job-status");
  const retry = document.getElementById("job-retry");
  // Words come from the page's #i18n-strings JSON (in the page's language); {name} is filled in.
  const STRINGS = (() => { try { return JSON.parse(document.getElementById("i18n-strings").textContent); } catch (e) { return {}; } })();
  function t(key, vars) {
    return String(STRINGS[key] || key).replace(/\{(\w+)\}/g, (m, k) => (vars && k in vars ? String(vars[k]) : m));
  }
  async function poll() {
    let job;
    try {
      const r = await fetch(root.dataset.status, { headers: { accept: "application/json" } });
      job = await r.json();
    } catch (e) {
      setTimeout(poll, 2000);
      return;
    }
    if (!job || !job.state) {  // 404: no such job (any more) for this client
      status.textContent = (job && typeof job.detail === "string" && job.detail) || t("unreachable");
      retry.hidden = false;
      return;
    }
    const pct = Math.round((job.progress || 0) * 100);
    bar.value = pct;
    bar.textContent = pct + " %";
    if (job.state === "done") {
      status.textContent = t("job_done");
      location.reload();
    } else if (job.state === "running") {
      status.textContent = t("job_progress", { pct: pct + " %", s: Math.round(job.elapsed_s || 0) });
      setTimeout(poll, 500);
    } else {
      // The state's word in the page's language; the error comes in it from the server.
      if (job.state === "failed") {
        status.textContent = job.error ? t("job_failed", { error: job.error }) : t("job_failed_plain");
      } else if (job.state === "cancelled") {
        status.textContent = t("job_cancelled");
      } else {
        status.textContent = t("job_state", { state: job.state });
      }
      retry.hidden = false;
    }
  }
  poll();
})();
