// "Start a class" on a player: create the class, keep the lecturer token in this browser
// (never in a link), open the presenter view.
(() => {
  const btn = document.getElementById("class-start");
  if (!btn) return;
  btn.addEventListener("click", async () => {
    btn.disabled = true;
    const step = window.Stepscope ? window.Stepscope.step : 0;
    try {
      const r = await fetch("/api/v1/classes", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ scenario: btn.dataset.scenario, step }),
      });
      const body = await r.json();
      if (r.status !== 201) throw new Error(typeof body.detail === "string" ? body.detail : (body.detail || []).map((d) => d.msg).join("; "));
      localStorage.setItem("stepscope.class.lecturer." + body.id, body.lecturer_token);
      window.location.href = body.presenter_url;
    } catch (err) {
      btn.disabled = false;
      btn.title = (btn.dataset.failed || "{reason}").replace("{reason}", err.message);
      window.alert(btn.title);
    }
  });
})();
