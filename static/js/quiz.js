// "Quiz me": the walkthrough's questions (GET /api/v1/quiz), asked at their steps, with a score
// and the explanation after each answer. Self-study: nothing is sent, nothing is stored.
(() => {
  const btn = document.getElementById("quiz-start");
  const player = document.getElementById("player");
  if (!btn || !player || !window.Stepscope) return;
  const d = btn.dataset;
  const fmt = (t, v) => (t || "").replace(/\{(\w+)\}/g, (m, k) => (k in v ? String(v[k]) : m));
  const answered = new Map(); // step -> right?
  let questions = null;
  let on = false;

  const panel = document.createElement("section");
  panel.className = "class-question quiz-panel";
  panel.id = "quiz-panel";
  panel.hidden = true;
  panel.setAttribute("aria-live", "polite");
  player.parentNode.insertBefore(panel, player);

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function score() {
    const right = [...answered.values()].filter(Boolean).length;
    return fmt(d.score, { score: right, done: answered.size, total: questions.length });
  }
  function nextOpen() {
    return questions.find((q) => !answered.has(q.step));
  }

  function ask(q) {
    panel.replaceChildren(el("h2", "", d.heading), el("p", "quiz-prompt", q.prompt));
    const box = el("div", "class-choices");
    const result = el("p", "class-result");
    const tools = el("p", "quiz-tools");
    q.choices.forEach((text, i) => {
      const b = el("button", "button class-choice", text);
      b.type = "button";
      b.addEventListener("click", () => {
        const right = i === q.correct;
        answered.set(q.step, right);
        box.querySelectorAll("button").forEach((o, j) => {
          o.disabled = true;
          o.classList.toggle("correct", j === q.correct);
        });
        b.classList.add("chosen");
        result.textContent = (right ? d.right : fmt(d.wrong, { answer: q.choices[q.correct] })) + " " + q.explanation;
        const show = el("button", "button", d.show);
        show.type = "button";
        show.addEventListener("click", () => window.Stepscope.goto(q.answer_step));
        tools.replaceChildren(show, el("span", "quiz-score", " " + score() + " "));
        const next = nextOpen();
        if (next) {
          const go = el("button", "button primary", d.next);
          go.type = "button";
          go.addEventListener("click", () => window.Stepscope.goto(next.step));
          tools.append(go);
        }
      });
      box.append(b);
    });
    panel.append(box, result, tools);
    panel.hidden = false;
  }

  document.addEventListener("stepscope:step", (ev) => {
    if (!on || !questions) return;
    const q = questions.find((x) => x.step === ev.detail.step && !answered.has(x.step));
    if (q) ask(q);
  });

  btn.addEventListener("click", async () => {
    on = !on;
    btn.setAttribute("aria-pressed", String(on));
    if (!on) {
      panel.hidden = true;
      return;
    }
    if (!questions) {
      const lang = document.documentElement.lang;
      const url = "/api/v1/quiz?scenario=" + encodeURIComponent(d.scenario) + (lang ? "&lang=" + encodeURIComponent(lang) : "");
      const r = await fetch(url, { headers: { Accept: "application/json" } });
      questions = r.ok ? (await r.json()).questions : [];
    }
    const next = questions.length ? nextOpen() : null;
    if (!next) {
      panel.replaceChildren(el("p", "", questions.length ? score() : d.none));
      panel.hidden = false;
      return;
    }
    if (window.Stepscope.step === next.step) ask(next);
    else window.Stepscope.goto(next.step);
  });
})();
