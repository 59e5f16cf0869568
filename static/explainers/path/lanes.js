// Sticky lane names for the packet-path swimlane. On a phone the picture is wider than the
// screen and scrolls sideways inside #stage; SVG content cannot be position: sticky, so this
// moves the picture's lane-name column (#lane-heads) by the stage's scroll, in the picture's
// own units. The player morphs the stage each step (dropping the offset), so it is set again
// after every render ("stepscope:rendered") and on every scroll of the stage.
(function () {
  "use strict";
  function pin() {
    const stage = document.getElementById("stage");
    const svg = stage ? stage.querySelector("svg.path-svg") : null;
    const heads = svg ? svg.querySelector("#lane-heads") : null;
    if (!heads) return;
    const shown = svg.getBoundingClientRect().width;
    const units = svg.viewBox && svg.viewBox.baseVal ? svg.viewBox.baseVal.width : 0;
    const dx = shown > 0 && units > 0 ? (stage.scrollLeft * units) / shown : 0;
    if (dx > 0.5) heads.setAttribute("transform", "translate(" + dx.toFixed(1) + " 0)");
    else heads.removeAttribute("transform");
  }
  document.addEventListener("stepscope:rendered", pin);
  document.addEventListener("scroll", (ev) => { if (ev.target && ev.target.id === "stage") pin(); }, true);
  window.addEventListener("resize", pin);
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", pin);
  else pin();
})();
