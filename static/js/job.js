// Follows a long simulation (a job): shows its progress, reloads the page when it is done.
(function () {
  "use strict";
  const root = document.getElementById("job");
  if (!root) return;
  const bar = document.getElementById("job-progress");
  const status = document.getElementById("job-status");
  const retry = document.getElementById("job-retry");
  async function poll() {
    let job;
    try {
      const r = await fetch(root.dataset.status, { headers: { accept: "application/json" } });
      job = await r.json();
    } catch (e) {
      setTimeout(poll, 2000);
      return;
    }
    const pct = Math.round((job.progress || 0) * 100);
    bar.value = pct;
    bar.textContent = pct + " %";
    if (job.state === "done") {
      status.textContent = "Done: opening the walkthrough…";
      location.reload();
    } else if (job.state === "running") {
      status.textContent = pct + " % simulated, " + Math.round(job.elapsed_s || 0) + " s so far";
      setTimeout(poll, 500);
    } else {
      status.textContent = "The run " + job.state + (job.error ? ": " + job.error : ".");
      retry.hidden = false;
    }
  }
  poll();
})();
