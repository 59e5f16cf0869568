// A live class on a player page: a student follows the lecturer's step (server-sent events),
// may step on their own and comes back with F; the lecturer's steps move the class, they ask
// questions and reveal the answers. Words come from the bar's data attributes (catalogs).
(() => {
  const bar = document.getElementById("class-bar");
  if (!bar || !window.Stepscope) return;
  const player = window.Stepscope;
  const id = bar.dataset.class;
  const role = bar.dataset.role;
  const api = "/api/v1/classes/" + encodeURIComponent(id);
  const $ = (x) => document.getElementById(x);
  const fmt = (t, v) => (t || "").replace(/\{(\w+)\}/g, (m, k) => (k in v ? String(v[k]) : m));
  const reason = (body) => (typeof body.detail === "string" ? body.detail : (body.detail || []).map((d) => d.msg).join("; "));
  let classStep = parseInt(bar.dataset.step || "0", 10);

  async function call(method, path, token, body) {
    const headers = { Accept: "application/json" };
    if (token) headers.Authorization = "Bearer " + token;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const r = await fetch(api + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await r.text();
    return { status: r.status, body: text ? JSON.parse(text) : {} };
  }

  // The class's events. A stream that ends on a network error is reopened by the browser; one
  // answered with an error status (a 503 while the store is busy) is closed for good, so it is
  // opened again here after a pause (a new listener first gets the current step).
  const REOPEN_MS = 3000;
  function stream(handlers, onOpen, onError) {
    const lang = document.documentElement.lang;
    const url = api + "/events" + (lang ? "?lang=" + encodeURIComponent(lang) : "");
    function open() {
      const es = new EventSource(url);
      for (const [kind, fn] of Object.entries(handlers)) {
        es.addEventListener(kind, (ev) => fn(JSON.parse(ev.data)));
      }
      if (onOpen) es.addEventListener("open", onOpen);
      es.addEventListener("error", () => {
        if (onError) onError();
        if (es.readyState === EventSource.CLOSED) setTimeout(open, REOPEN_MS);
      });
    }
    open();
  }

  // --- student ---------------------------------------------------------------------------
  function student() {
    const status = $("class-status");
    const followBtn = $("class-follow");
    const key = "stepscope.class.student." + id;
    let following = true;
    let token = localStorage.getItem(key);
    let question = null;

    function show(lost) {
      if (lost) status.textContent = bar.dataset.lost;
      else if (following) status.textContent = fmt(bar.dataset.following, { step: classStep });
      else status.textContent = fmt(bar.dataset.own, { step: classStep, mine: player.step });
      followBtn.hidden = following;
      bar.classList.toggle("on-own", !following);
    }
    function follow() {
      following = true;
      player.goto(classStep, "replace");
      show();
    }
    document.addEventListener("stepscope:step", (ev) => {
      following = ev.detail.step === classStep;
      show();
    });
    followBtn.addEventListener("click", follow);
    document.addEventListener("keydown", (ev) => {
      const t = ev.target;
      if (ev.key !== "f" && ev.key !== "F") return;
      if (ev.ctrlKey || ev.metaKey || ev.altKey || (t && /^(input|textarea|select)$/i.test(t.tagName))) return;
      ev.preventDefault();
      follow();
    });

    async function join() {
      if (token) return token;
      const r = await fetch("/api/v1/classes/join", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ code: bar.dataset.code }),
      });
      if (r.status !== 201) return null;
      token = (await r.json()).student_token;
      localStorage.setItem(key, token);
      return token;
    }

    const panel = $("class-question");
    function ask(q) {
      question = q;
      $("class-prompt").textContent = q.prompt;
      $("class-result").textContent = "";
      const box = $("class-choices");
      box.replaceChildren();
      q.choices.forEach((text, i) => {
        const b = document.createElement("button");
        b.type = "button";
        b.className = "button class-choice";
        b.textContent = text;
        b.dataset.choice = String(i);
        b.addEventListener("click", async () => {
          for (const other of box.querySelectorAll("button")) other.disabled = true;
          b.classList.add("chosen");
          const r = await call("POST", "/answers", await join(), { question_id: q.question_id, choice: i });
          $("class-result").textContent = r.status === 204 ? bar.dataset.answered : reason(r.body);
        });
        box.append(b);
      });
      panel.hidden = false;
    }
    function reveal(r) {
      if (!question || question.question_id !== r.question_id) return;
      const buttons = $("class-choices").querySelectorAll("button");
      buttons.forEach((b, i) => {
        b.disabled = true;
        b.classList.toggle("correct", i === r.correct);
      });
      const chosen = $("class-choices").querySelector(".chosen");
      const right = chosen && parseInt(chosen.dataset.choice, 10) === r.correct;
      const answer = question.choices[r.correct];
      $("class-result").textContent = (right ? bar.dataset.right : fmt(bar.dataset.wrong, { answer })) + " " + (r.explanation || "");
    }

    function skip(d) {
      if (!question || question.question_id !== d.question_id) return;
      question = null;
      panel.hidden = true;
    }

    stream(
      {
        step: (d) => {
          classStep = d.step;
          if (following) player.goto(classStep, "replace");
          show();
        },
        question: ask,
        reveal,
        skip,
      },
      () => show(),
      () => show(true),
    );
    join();
    show();
  }

  // --- lecturer --------------------------------------------------------------------------
  function lecturer() {
    const key = "stepscope.class.lecturer." + id;
    let token = localStorage.getItem(key);
    let posted = classStep;
    let timer = 0;
    let open = null;
    const form = $("class-token-form");
    const askStatus = $("class-ask-status");

    function needToken() {
      form.hidden = false;
      askStatus.textContent = bar.dataset.noToken;
    }
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      token = $("class-token").value.trim();
      localStorage.setItem(key, token);
      form.hidden = true;
      askStatus.textContent = "";
    });
    if (!token) needToken();

    function nextNarration(step) {
      const tpl = document.getElementById("frame-" + (step + 1));
      const el = tpl && tpl.content.querySelector(".narration");
      $("class-next-narration").textContent = el ? el.textContent : "";
    }
    async function move(step) {
      if (step === posted || !token) return;
      posted = step;
      const r = await call("POST", "/step", token, { step });
      if (r.status !== 204) askStatus.textContent = fmt(bar.dataset.failed, { reason: reason(r.body) });
      if (r.status === 401 || r.status === 403) needToken();
    }
    document.addEventListener("stepscope:step", (ev) => {
      nextNarration(ev.detail.step);
      window.clearTimeout(timer);
      timer = window.setTimeout(() => move(ev.detail.step), 120);
    });
    nextNarration(player.step);

    function counts(q) {
      const list = $("class-counts");
      list.replaceChildren();
      q.choices.forEach((text, i) => {
        const li = document.createElement("li");
        const n = q.counts ? q.counts[i] : 0;
        li.textContent = text + " — " + n;
        li.style.setProperty("--share", String(q.answers ? n / q.answers : 0));
        if (q.revealed && i === q.correct) li.className = "correct";
        list.append(li);
      });
      list.hidden = false;
    }
    async function refresh() {
      const room = await call("GET", "", null);
      if (room.status === 200) $("class-room").textContent = fmt(bar.dataset.room, { joined: room.body.joined });
      if (open && token) {
        const r = await call("GET", "/questions/" + open.question_id, token);
        if (r.status === 200) {
          counts(r.body);
          askStatus.textContent = fmt(bar.dataset.answers, { n: r.body.answers });
        }
      }
    }
    window.setInterval(refresh, 2000);

    // A question is open: asked here, or by a step the lesson marks (the stream tells).
    function opened(q) {
      if (open && open.question_id === q.question_id) return;
      open = q;
      counts({ ...open, counts: null, answers: 0 });
      askStatus.textContent = open.prompt;
      $("class-reveal").hidden = false;
      $("class-skip").hidden = false;
    }
    function closed() {
      $("class-reveal").hidden = true;
      $("class-skip").hidden = true;
      open = null;
    }
    stream({
      question: opened,
      skip: (d) => {
        if (!open || open.question_id !== d.question_id) return;
        closed();
        $("class-counts").hidden = true;
        askStatus.textContent = bar.dataset.skipped;
      },
    });

    $("class-ask").addEventListener("click", async () => {
      const r = await call("POST", "/questions", token, { step: player.step });
      if (r.status !== 201) {
        askStatus.textContent = reason(r.body);
        return;
      }
      opened(r.body);
    });
    $("class-reveal").addEventListener("click", async () => {
      if (!open) return;
      const r = await call("POST", "/questions/" + open.question_id + "/reveal", token);
      if (r.status !== 200) {
        askStatus.textContent = reason(r.body);
        return;
      }
      counts({ ...open, counts: r.body.counts, correct: r.body.correct, revealed: true, answers: r.body.counts.reduce((a, b) => a + b, 0) });
      closed();
      posted = r.body.step;
      classStep = r.body.step;
      player.goto(r.body.step);
    });
    $("class-skip").addEventListener("click", async () => {
      if (!open) return;
      const r = await call("POST", "/questions/" + open.question_id + "/skip", token);
      if (r.status !== 204) askStatus.textContent = reason(r.body);
    });
  }

  if (role === "lecturer") lecturer();
  else student();
})();
