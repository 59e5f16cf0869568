// postMessage API of an embedded Stepscope player (see docs/embedding.md).
//
// Host → embed:  {type: "stepscope:goto", step: N} | {type: "stepscope:next"} | {type: "stepscope:prev"}
//                {type: "stepscope:play"} | {type: "stepscope:pause"} | {type: "stepscope:hello"}
// Embed → host:  {type: "stepscope:step", step: i, count: n}   after every change, once at load,
//                                                               and in answer to "hello"
//                {type: "stepscope:handoff", key: "PageDown", direction: "next"|"prev"}
//                  when a clicker key would step past either end: the host deck should move on.
//
// Clicker keys (PageDown/PageUp, →/←) step the animation while it has steps left in that
// direction; at either end the key is handed back to the host, so one clicker drives both.
(function () {
  "use strict";
  const S = window.Stepscope;
  const framed = window.parent && window.parent !== window;
  if (!S) return;

  function post(msg) {
    // Steps are not secret, and the host may be on any origin, so "*" is the right target.
    if (framed) window.parent.postMessage(msg, "*");
  }
  function announce() { post({ type: "stepscope:step", step: S.step, count: S.count }); }

  document.addEventListener("stepscope:step", announce);

  window.addEventListener("message", (ev) => {
    if (!framed || ev.source !== window.parent) return;
    const data = ev.data;
    if (!data || typeof data !== "object" || typeof data.type !== "string") return;
    switch (data.type) {
      case "stepscope:goto": {
        const n = Number(data.step);
        if (Number.isInteger(n)) { S.pause(); S.goto(n); }
        break;
      }
      case "stepscope:next": S.pause(); S.next(); break;
      case "stepscope:prev": S.pause(); S.prev(); break;
      case "stepscope:play": S.play(); break;
      case "stepscope:pause": S.pause(); break;
      case "stepscope:hello": announce(); break;
      default: return;
    }
    if (S.count === 0) announce(); // an empty trace never changes, but the host still hears back
  });

  const FORWARD = new Set(["PageDown", "ArrowRight"]);
  const BACK = new Set(["PageUp", "ArrowLeft"]);
  // Capture phase on window: runs before the player's own key handler, which then sees the
  // event as handled (defaultPrevented) and leaves it alone.
  window.addEventListener("keydown", (ev) => {
    if (ev.defaultPrevented || ev.altKey || ev.ctrlKey || ev.metaKey) return;
    const forward = FORWARD.has(ev.key);
    if (!forward && !BACK.has(ev.key)) return;
    const t = ev.target;
    const tag = t && t.tagName ? t.tagName.toLowerCase() : "";
    if (tag === "input" || tag === "select" || tag === "textarea") return;
    ev.preventDefault();
    S.pause();
    const canMove = forward ? S.step < S.count - 1 : S.step > 0;
    if (canMove) {
      if (forward) S.next(); else S.prev();
    } else if (framed) {
      post({ type: "stepscope:handoff", key: ev.key, direction: forward ? "next" : "prev", step: S.step, count: S.count });
    }
  }, true);

  announce();
})();
