// The example deck's glue between reveal.js and embedded Stepscope players (docs/embedding.md).
// Each embed announces {type: "stepscope:step", step, count}; the deck remembers the latest per
// iframe. A forward key (PageDown, →, Space) on a slide whose animation has steps left sends
// {type: "stepscope:next"} to it; otherwise reveal.js moves on. Backward keys mirror that. When
// the embed itself has focus, it steps on its own and posts {type: "stepscope:handoff"} at
// either end: the deck then changes slide and takes the focus back.
(function () {
  "use strict";
  const states = new Map(); // iframe element -> {step, count}
  const log = [];

  function currentEmbed() {
    const slide = window.Reveal && window.Reveal.getCurrentSlide();
    return slide ? slide.querySelector("iframe.stepscope") : null;
  }
  function send(frame, msg) { frame.contentWindow.postMessage(msg, "*"); }

  function forward() {
    const frame = currentEmbed();
    const st = frame && states.get(frame);
    if (st && st.step < st.count - 1) send(frame, { type: "stepscope:next" });
    else window.Reveal.next();
  }
  function backward() {
    const frame = currentEmbed();
    const st = frame && states.get(frame);
    if (st && st.step > 0) send(frame, { type: "stepscope:prev" });
    else window.Reveal.prev();
  }

  window.addEventListener("message", (ev) => {
    const data = ev.data;
    if (!data || typeof data !== "object" || typeof data.type !== "string") return;
    const frame = Array.from(document.querySelectorAll("iframe.stepscope"))
      .find((f) => f.contentWindow === ev.source);
    if (!frame) return;
    log.push(Object.assign({ frame: frame.id }, data));
    if (data.type === "stepscope:step") {
      states.set(frame, { step: data.step, count: data.count });
    } else if (data.type === "stepscope:handoff") {
      if (data.direction === "prev") window.Reveal.prev(); else window.Reveal.next();
      frame.blur();
      window.focus();
    }
  });

  // An embed may have announced itself before this script ran: ask each for its state, now and
  // whenever it (re)loads.
  document.querySelectorAll("iframe.stepscope").forEach((frame) => {
    frame.addEventListener("load", () => send(frame, { type: "stepscope:hello" }));
    if (frame.contentWindow) send(frame, { type: "stepscope:hello" });
  });

  window.Reveal.initialize({
    hash: true,
    width: 1100,
    height: 760,
    keyboard: {
      34: forward, 39: forward, 32: forward, // PageDown, →, Space
      33: backward, 37: backward,            // PageUp, ←
    },
  });

  window.stepscopeDeck = {
    log,
    state: (id) => { const f = document.getElementById(id); return f ? states.get(f) || null : null; },
  };
})();
