// Draws every Plotly figure the server left as JSON (app/web/explainers/cwnd/charts.py) once
// plotly.js and the DOM are ready, one chart per task and a figure of stacked rows in passes
// (see warmups) so no task blocks the page for long, then announces "stepscope:charts-ready"
// so the cursor can attach (a chart still being drawn carries the class plotly-drawing). Colours come from the page's CSS
// variables (static/css/app.css) at draw time and again whenever the theme changes.
(function () {
  "use strict";
  const CONFIG = { responsive: true, displaylogo: false, modeBarButtonsToRemove: ["lasso2d", "select2d"] };
  const DARK = { flows: ["--sky", "--orange", "--green", "--purple", "--yellow", "--vermillion", "--blue", "--grey"] };
  const LIGHT = { flows: ["--blue", "--orange", "--green", "--purple", "--sky", "--vermillion", "--yellow", "--grey"] };

  function cssVar(style, name, fallback) {
    const v = style.getPropertyValue(name).trim();
    return v || fallback;
  }
  function alpha(hex, a) {
    const m = /^#([0-9a-f]{6})$/i.exec(hex);
    if (!m) return hex;
    const n = parseInt(m[1], 16);
    return "rgba(" + (n >> 16) + "," + ((n >> 8) & 255) + "," + (n & 255) + "," + a + ")";
  }
  // The colours of the current theme: page colours and one colour per trace role.
  function theme() {
    const style = getComputedStyle(document.documentElement);
    const dark = document.documentElement.dataset.theme === "dark";
    const pick = (name, fb) => cssVar(style, name, fb);
    const flows = (dark ? DARK : LIGHT).flows.map((n) => pick(n, "#0072B2"));
    const fg = pick("--fg", "#1b1f24");
    const muted = pick("--muted", "#5b6470");
    const roles = {
      overlay: muted,
      "overlay-est": pick("--green", "#009E73"),
      queue: pick("--grey", "#999999"),
      "ev-loss": pick("--vermillion", "#D55E00"),
      "ev-rto": dark ? "#ff8a5c" : pick("--vermillion", "#D55E00"),
      "ev-tlp": pick("--orange", "#E69F00"),
      "ev-ok": pick("--green", "#009E73"),
      "ev-hystart": dark ? pick("--sky", "#56B4E9") : pick("--blue", "#0072B2"),
      "ev-epoch": muted,
      "ev-bbr": pick("--purple", "#CC79A7"),
    };
    return {
      bg: pick("--bg", "#ffffff"), fg: fg, muted: muted, line: pick("--line", "#d5d9df"),
      panel: pick("--panel", "#f5f6f8"), flows: flows, roles: roles,
    };
  }
  function roleColour(th, role) {
    const m = /^flow(\d+)$/.exec(role || "");
    if (m) return th.flows[Number(m[1]) % th.flows.length];
    return th.roles[role] || th.fg;
  }
  // Recolour a figure in place for theme ``th`` (the JSON carries light colours and roles).
  function paint(fig, th) {
    for (const tr of fig.data) {
      const role = tr.meta && tr.meta.role;
      if (!role) continue;
      if (role === "bars") {
        tr.marker.color = tr.x.map((_, i) => th.flows[i % th.flows.length]);
        tr.textfont = { color: th.bg };
        continue;
      }
      const c = roleColour(th, role);
      if (tr.line) tr.line.color = c;
      if (tr.marker) { tr.marker.color = c; if (tr.marker.line) tr.marker.line.color = c; }
      if (tr.fill) tr.fillcolor = alpha(c, 0.3);
    }
    const L = fig.layout;
    L.paper_bgcolor = th.bg;
    L.plot_bgcolor = th.bg;
    L.font = Object.assign({}, L.font, { color: th.fg });
    L.hoverlabel = Object.assign({}, L.hoverlabel, { bgcolor: th.panel, bordercolor: th.line, font: { color: th.fg, size: 13 } });
    L.legend = Object.assign({}, L.legend, { bgcolor: "rgba(0,0,0,0)", font: Object.assign({}, (L.legend || {}).font, { color: th.fg }) });
    for (const key of Object.keys(L)) {
      if (!/^[xy]axis\d*$/.test(key)) continue;
      Object.assign(L[key], { gridcolor: th.line, linecolor: th.line, zerolinecolor: th.line, tickfont: Object.assign({}, L[key].tickfont, { color: th.fg }) });
    }
    for (const a of L.annotations || []) a.font = Object.assign({}, a.font, { color: th.fg });
    return fig;
  }

  // The player's picture box (static/css/app.css, --fit-h) when it must hold the step chart and
  // the step's card on one screen: wide pages and embeds, not a stacked narrow page.
  function fitBox(el) {
    const player = el.closest(".player.fit");
    if (!player || !el.closest(".chart[data-cursor]")) return 0;
    const stacked = player.dataset.embed !== "1" && window.matchMedia("(max-width: 900px)").matches;
    if (stacked) return 0;
    return parseFloat(getComputedStyle(player).getPropertyValue("--fit-h")) || 0;
  }
  // The step chart takes what the picture box leaves once the step's card and fields are in
  // it (the card keeps one height for a whole run), down to a floor where the plots still read.
  function boxHeight(el, current) {
    const box = fitBox(el);
    const wrap = el.closest(".stage-wrap");
    if (!box || !wrap) return 0;
    let bottom = el.getBoundingClientRect().bottom;
    // an embed keeps the chart and the card on screen; its field grid may scroll below them
    const below = el.closest(".player").dataset.embed === "1" ? ["stage"] : ["stage", "fields"];
    for (const id of below) {
      const part = document.getElementById(id);
      if (part && wrap.contains(part)) bottom = Math.max(bottom, part.getBoundingClientRect().bottom);
    }
    const used = bottom - wrap.getBoundingClientRect().top + wrap.scrollTop;
    return Math.max(220, Math.floor(current + box - used - 4));
  }

  // On a narrow screen the legend goes under the plot, and the figure grows to hold it.
  // Returns whether the legend moved.
  function fit(fig, width, el) {
    const L = fig.layout;
    if (L._fullHeight === undefined) L._fullHeight = L.height;
    if (L._wideLegend === undefined && L.legend) {
      const g = L.legend;
      L._wideLegend = { orientation: g.orientation, x: g.x, xanchor: g.xanchor, y: g.y, yanchor: g.yanchor, yref: g.yref || "paper" };
    }
    if (!width) return false; // not laid out yet (a hidden iframe): decide once it is
    const beside = !L._legendBelow;
    if ((el && fitBox(el)) || !L.legend || L.showlegend === false || width >= 760) {
      // a height-bound box, or room enough: the legend stays beside the plot
      if (beside) return false;
      L.legend = Object.assign({}, L.legend, L._wideLegend);
      L.height = L._fullHeight;
      L._legendBelow = false;
      return true;
    }
    L._legendBelow = true;
    if (L._wideHeight === undefined) L._wideHeight = L._fullHeight;
    const entries = fig.data.filter((t) => t.showlegend !== false).length;
    const groups = new Set(fig.data.map((t) => t.legendgroup)).size;
    const perRow = Math.max(1, Math.floor(width / 180));
    const rows = Math.ceil(entries / perRow) + groups;
    // at the foot of the figure, below the time axis and its labels
    L.legend = Object.assign({}, L.legend, { orientation: "h", x: 0, xanchor: "left", yref: "container", y: 0, yanchor: "bottom" });
    L.height = L._wideHeight - 120 + 22 * rows;
    L.yaxis = Object.assign({}, L.yaxis); // the plot keeps its own height: the margin grows
    return beside;
  }

  // On a projector (the projector theme) and in an embed the picture is the thing (as in
  // static/js/player.js): the step chart's text is drawn at BIG_TYPE px or more, and where its
  // box is too short for every row at that size the secondary rows (queue, RTT, rates) fold,
  // leaving the top row (cwnd, ssthresh and the events) with a legend that fits beside it.
  const BIG_TYPE = 16;
  const ALL_ROWS_MIN = 560; // px of chart box that hold every row and its legend at BIG_TYPE
  function bigChart(el) {
    const player = el.closest(".player");
    if (!player || !el.closest(".chart[data-cursor]")) return false;
    return player.dataset.embed === "1" || document.documentElement.dataset.theme === "projector";
  }
  function typeset(fig) {
    const L = fig.layout;
    const big = (font, size) => Object.assign({}, font, { size: Math.max((font && font.size) || 0, size) });
    L.font = big(L.font, BIG_TYPE);
    L.hoverlabel = Object.assign({}, L.hoverlabel, { font: big((L.hoverlabel || {}).font, BIG_TYPE) });
    if (L.title && L.title.text) L.title = Object.assign({}, L.title, { font: big(L.title.font, BIG_TYPE + 1) });
    for (const key of Object.keys(L)) {
      if (/^[xy]axis\d*$/.test(key)) L[key] = Object.assign({}, L[key], { tickfont: big(L[key].tickfont, BIG_TYPE) });
    }
    for (const a of L.annotations || []) a.font = big(a.font, BIG_TYPE);
    if (L.legend) {
      L.legend = Object.assign({}, L.legend, {
        font: big(L.legend.font, BIG_TYPE), grouptitlefont: big(L.legend.grouptitlefont, BIG_TYPE), tracegroupgap: 8,
      });
    }
    L.margin = Object.assign({}, L.margin, { l: Math.max((L.margin || {}).l || 0, 64) });
  }
  // Keep only the top row of a figure of stacked rows (its traces, axis and title).
  function foldRows(fig) {
    const L = fig.layout;
    const rows = Object.keys(L).filter((k) => /^yaxis\d*$/.test(k) && L[k].domain);
    if (rows.length < 2) return;
    const top = rows.reduce((a, b) => (L[b].domain[1] > L[a].domain[1] ? b : a));
    const ref = "y" + top.slice(5);
    const head = L[top].domain[1];
    fig.data = fig.data.filter((t) => (t.yaxis || "y") === ref);
    for (const k of rows) if (k !== top) delete L[k];
    L[top] = Object.assign({}, L[top], { domain: [0, 1] });
    L.xaxis = Object.assign({}, L.xaxis, { anchor: ref });
    L.annotations = (L.annotations || []).filter((a) => a.y === head).map((a) => Object.assign({}, a, { y: 1 }));
    L._folded = true;
  }
  // How much of the legend Plotly had to put behind a scroll bar (0: all of it shows).
  function legendHidden(el) {
    let hidden = 0;
    for (const g of el.querySelectorAll("g.legend, g.legend2")) {
      const content = g.querySelector(".scrollbox");
      const shown = g.querySelector(".bg");
      if (content && shown) hidden = Math.max(hidden, content.getBBox().height - shown.getBBox().height);
    }
    return hidden;
  }
  const MIN_PLOT = 80; // px: the least height a plot row keeps when its legend is under it
  function plotHeight(el) {
    const full = el._fullLayout;
    const keys = full ? Object.keys(full).filter((k) => /^yaxis\d*$/.test(k) && full[k]._length) : [];
    return keys.length ? Math.min(...keys.map((k) => full[k]._length)) : Infinity;
  }
  // Nothing is cut off, and the step's card stays on screen: a big chart whose legend does not
  // fit beside it first drops the group titles (each entry then names its flow, when there are
  // several), then folds its secondary rows.
  async function unclipLegend(el, fig) {
    const L = fig.layout;
    if (!L._big || !L.legend || L.showlegend === false) return false;
    const steps = [
      () => {
        const flows = new Set(fig.data.filter((t) => /^flow/.test(t.legendgroup || "")).map((t) => t.legendgroup));
        for (const t of fig.data) {
          const title = t.legendgrouptitle && t.legendgrouptitle.text;
          if (flows.size > 1 && title && /^flow/.test(t.legendgroup || "")) {
            t.meta = Object.assign({}, t.meta, { flowTitle: title, line: t.name });
            t.name = title + " " + t.name;
          }
          delete t.legendgrouptitle;
        }
        L.legend = Object.assign({}, L.legend, { tracegroupgap: 4 });
      },
      () => foldRows(fig),
      // the legend in rows under the time axis, the full width of the box (two flows with
      // every event kind: ten entries do not fit beside a plot the card leaves ~330 px for)
      () => {
        // a flow's line keeps its first word (cwnd, ssthresh, W(t), W_est; up to a space or a
        // full-width bracket in Chinese): two entries a row
        for (const t of fig.data) {
          const m = t.meta || {};
          if (m.flowTitle && m.line) t.name = m.flowTitle + " " + String(m.line).split(/[\s\uff08]/)[0];
        }
        L.legend = Object.assign({}, L.legend, {
          orientation: "h", traceorder: "normal", xref: "container", x: 0, xanchor: "left", yref: "container", y: 0, yanchor: "bottom",
          tracegroupgap: 0, itemwidth: 30, maxheight: 0.62,
        });
        L._legendUnder = true;
      },
    ];
    let changed = false;
    while ((L._unclip || 0) < steps.length && legendHidden(el) > 1) {
      steps[L._unclip || 0]();
      L._unclip = (L._unclip || 0) + 1;
      await window.Plotly.react(el, fig.data, L, CONFIG);
      changed = true;
    }
    // rows of legend under a short box leave the plot too little: the chart grows to keep it
    const plot = L._legendUnder ? plotHeight(el) : Infinity;
    if (plot < MIN_PLOT) {
      L._minHeight = (L.height || el.clientHeight) + MIN_PLOT - plot;
      L.height = L._minHeight;
      await window.Plotly.relayout(el, { height: L.height });
      changed = true;
    }
    return changed;
  }
  // A figure as this chart shows it: parsed from the page, made big (and folded) where the
  // player draws its picture big.
  function prepare(el, text) {
    const fig = JSON.parse(text);
    if (bigChart(el)) {
      typeset(fig);
      const box = fitBox(el);
      if (box && box < ALL_ROWS_MIN) foldRows(fig);
      fig.layout._big = true;
    }
    return fig;
  }

  const figures = new Map(); // element -> its figure (kept to re-theme without re-parsing)
  // Charts being drawn, recoloured or resized say so (aria-busy) until they are done.
  let busy = 0;
  function markBusy() {
    for (const el of figures.keys()) {
      if (busy) el.setAttribute("aria-busy", "true");
      else el.removeAttribute("aria-busy");
    }
  }
  function working(fn) {
    return async function (...args) {
      busy++;
      markBusy();
      try { return await fn(...args); } finally { busy--; markBusy(); }
    };
  }
  const nextTask = () => new Promise((resolve) => setTimeout(resolve, 0));
  // after the next paint (a task after the frame), so what was drawn is on screen meanwhile
  const nextFrame = () => new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));

  // The passes before the whole figure for a figure of stacked rows: the top row's lines alone
  // without the legend, then the top row with its markers and the legend (each on a copy of the
  // layout: plotly.js writes the ranges it computes into the layout it is given). None for a
  // one-row figure, drawn in one go.
  function warmups(fig) {
    const L = fig.layout;
    const rows = Object.keys(L).filter((k) => /^yaxis\d*$/.test(k) && L[k].domain);
    if (rows.length < 2) return [];
    const top = rows.reduce((a, b) => (L[b].domain[1] > L[a].domain[1] ? b : a));
    const ref = "y" + top.slice(5);
    const row = fig.data.filter((t) => (t.yaxis || "y") === ref);
    const lines = row.filter((t) => !/markers/.test(t.mode || "lines"));
    if (!lines.length || row.length === fig.data.length) return [];
    const copy = (legend) => Object.assign(JSON.parse(JSON.stringify(L)), legend ? {} : { showlegend: false });
    const out = [{ data: lines, layout: copy(false) }];
    if (row.length > lines.length && PASSES > 2) out.push({ data: row, layout: copy(true) });
    return out;
  }
  const PASSES = 3;

  const draw = working(async function (root) {
    if (!window.Plotly) return;
    const pending = Array.from((root || document).querySelectorAll(".plotly-pending"));
    if (!pending.length) return;
    const th = theme();
    for (const el of pending) {
      const src = document.getElementById(el.dataset.figure);
      if (!src || !el.classList.contains("plotly-pending")) continue;
      let fig;
      try { fig = prepare(el, src.textContent); } catch (e) { continue; }
      el.classList.remove("plotly-pending");
      el.textContent = "";
      el.style.minHeight = "";
      paint(fig, th);
      fit(fig, el.clientWidth, el);
      figures.set(el, fig);
      // A cold first plot (plotly.js compiling its code as it goes, every tick label and legend
      // entry measured) is one long task. Drawn in passes, none blocks the page for long: the
      // top row's lines, then with its markers and the legend, then the whole figure, each pass
      // a redraw that finds the code compiled. Every pass is painted before the next starts.
      // (Plotly.newPlot each time: Plotly.react, which would keep event listeners, costs about
      // twice as much here. newPlot drops them, so the cursor script wires the chart again when
      // "stepscope:charts-ready" comes.)
      el.setAttribute("aria-busy", "true");
      const passes = warmups(fig);
      if (passes.length) el.classList.add("plotly-drawing");
      for (const pass of passes) {
        await window.Plotly.newPlot(el, pass.data, pass.layout, CONFIG);
        await nextFrame();
      }
      await window.Plotly.newPlot(el, fig.data, fig.layout, CONFIG);
      await refit(el, fig);
      await unclipLegend(el, fig);
      await tidyTicks(el, fig);
      el.classList.remove("plotly-drawing");
      delete el.dataset.wired;
      await nextTask(); // one chart per task: input and paint get a turn in between
    }
    document.dispatchEvent(new CustomEvent("stepscope:charts-ready"));
  });
  const retheme = working(async function () {
    if (!window.Plotly) return;
    const th = theme();
    const redraw = new Set();
    for (const [el, fig] of Array.from(figures)) {
      if (!el.isConnected) { figures.delete(el); continue; }
      if (!!fig.layout._big !== bigChart(el)) {
        // into or out of the projector theme: the chart's type size (and rows) change too, so
        // it is drawn afresh from the page's JSON
        figures.delete(el);
        window.Plotly.purge(el);
        el.classList.add("plotly-pending");
        redraw.add(el.parentElement);
        continue;
      }
      paint(fig, th);
      await window.Plotly.react(el, fig.data, fig.layout, CONFIG);
      await nextTask();
    }
    for (const box of redraw) await draw(box);
    document.dispatchEvent(new CustomEvent("stepscope:charts-ready"));
  });
  // Size a drawn step chart to its box (after drawing, on every change of the player's box).
  async function refit(el, fig) {
    const want = boxHeight(el, el.clientHeight);
    if (!want) return false;
    const h = Math.max(Math.min(want, fig.layout._fullHeight || want), fig.layout._minHeight || 0);
    if (Math.abs(h - (fig.layout.height || 0)) < 2) return false;
    fig.layout.height = h;
    await window.Plotly.relayout(el, { height: h });
    return true;
  }
  // A short plot gets fewer y ticks, so its labels never run into each other (about one per
  // two lines of tick text).
  async function tidyTicks(el, fig) {
    const full = el._fullLayout;
    if (!full) return;
    const update = {};
    for (const key of Object.keys(fig.layout)) {
      if (!/^yaxis\d*$/.test(key) || !full[key] || !full[key]._length) continue;
      const size = (full[key].tickfont && full[key].tickfont.size) || 12;
      const n = Math.max(2, Math.floor(full[key]._length / (size * 2)));
      if (fig.layout[key].nticks === n) continue;
      fig.layout[key] = Object.assign({}, fig.layout[key], { nticks: n });
      update[key + ".nticks"] = n;
    }
    if (Object.keys(update).length) await window.Plotly.relayout(el, update);
  }
  let refitting = Promise.resolve();
  document.addEventListener("stepscope:fit", () => {
    if (!window.Plotly) return;
    refitting = refitting.then(working(async () => {
      let changed = false;
      for (const [el, fig] of Array.from(figures)) {
        if (!el.isConnected) continue;
        let moved = false;
        if (fit(fig, el.clientWidth, el)) {
          await window.Plotly.react(el, fig.data, fig.layout, CONFIG);
          moved = true;
        }
        const resized = await refit(el, fig);
        const unclipped = await unclipLegend(el, fig);
        if (resized || unclipped || moved) {
          await tidyTicks(el, fig);
          changed = true;
        }
      }
      if (changed) document.dispatchEvent(new CustomEvent("stepscope:charts-ready"));
    }));
  });
  new MutationObserver(retheme).observe(document.documentElement, { attributes: true, attributeFilter: ["data-theme"] });

  window.StepscopeCharts = { draw, retheme };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", () => draw());
  else draw();
  // htmx swaps (compare mode) bring new figures
  document.addEventListener("htmx:afterSettle", (ev) => draw(ev.target));
})();
