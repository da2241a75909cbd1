(function () {
  "use strict";
  // Trace viewer. Every string that came from a model or a data file reaches the page through
  // textContent, an attribute set by setAttribute, or a property; never through innerHTML.
  var data = JSON.parse(document.getElementById("trials-data").textContent);
  var svg = document.getElementById("timeline");
  var SVGNS = svg.namespaceURI; // the HTML parser put the inline <svg> in the SVG namespace
  var W = 960, ML = 112, MR = 24, Y_TRUE = 48, Y_REP = 118, Y_FRAMES = 160, Y_AXIS = 188;
  var rowsEl = document.getElementById("trial-rows");
  var filters = {
    model: document.getElementById("f-model"),
    condition: document.getElementById("f-condition"),
    domain: document.getElementById("f-domain"),
    outcome: document.getElementById("f-outcome")
  };
  var selectedId = null;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }
  function sv(tag, attrs, cls) {
    var e = document.createElementNS(SVGNS, tag);
    Object.keys(attrs).forEach(function (k) { e.setAttribute(k, String(attrs[k])); });
    if (cls) { e.setAttribute("class", cls); }
    return e;
  }
  function titled(node, text) {
    var t = document.createElementNS(SVGNS, "title");
    t.textContent = text;
    node.appendChild(t);
    return node;
  }
  function num(v, d) { return (typeof v === "number" && isFinite(v)) ? v.toFixed(d) : "—"; }
  function show(v) { return (v === null || v === undefined || v === "") ? "—" : String(v); }
  function outcome(t) {
    if (t.status && t.status !== "ok") { return "error"; }
    return t.correct === true ? "correct" : "incorrect";
  }

  function fillSelect(sel, key) {
    var values = Array.from(new Set(data.map(function (t) { return t[key]; }))).sort();
    values.forEach(function (v) {
      var o = el("option", null, v);
      o.value = v;
      sel.appendChild(o);
    });
  }
  fillSelect(filters.model, "model");
  fillSelect(filters.condition, "condition");
  fillSelect(filters.domain, "domain");

  function visible() {
    return data.filter(function (t) {
      return (!filters.model.value || t.model === filters.model.value) &&
        (!filters.condition.value || t.condition === filters.condition.value) &&
        (!filters.domain.value || t.domain === filters.domain.value) &&
        (!filters.outcome.value || outcome(t) === filters.outcome.value);
    });
  }

  function renderList() {
    var list = visible();
    rowsEl.textContent = "";
    list.forEach(function (t) {
      var tr = el("tr", "trial-row " + outcome(t));
      tr.dataset.trialId = t.trial_id;
      tr.tabIndex = 0;
      [t.model, t.condition, t.domain].forEach(function (v) { tr.appendChild(el("td", null, v)); });
      tr.appendChild(el("td", "num", show(t.n_events)));
      tr.appendChild(el("td", "num", show(t.frequency_hz)));
      tr.appendChild(el("td", "num", show(t.predicted_count)));
      var o = outcome(t);
      tr.appendChild(el("td", "mark " + o, o === "correct" ? "✓" : (o === "error" ? "!" : "✗")));
      tr.appendChild(el("td", "num", num(t.f1, 2)));
      if (t.trial_id === selectedId) { tr.classList.add("selected"); }
      tr.addEventListener("click", function () { select(t.trial_id); });
      tr.addEventListener("keydown", function (ev) { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); select(t.trial_id); } });
      rowsEl.appendChild(tr);
    });
    document.getElementById("f-count").textContent = list.length + " of " + data.length + " trials";
    if (list.length && !list.some(function (t) { return t.trial_id === selectedId; })) { select(list[0].trial_id); }
  }

  function fact(dl, k, v) {
    var d = el("div");
    d.appendChild(el("dt", null, k));
    d.appendChild(el("dd", null, v));
    dl.appendChild(d);
  }

  function niceStep(span) {
    var steps = [0.25, 0.5, 1, 2, 5, 10, 15, 30, 60, 120];
    for (var i = 0; i < steps.length; i++) { if (span / steps[i] <= 14) { return steps[i]; } }
    return 300;
  }

  function drawTimeline(t) {
    svg.textContent = "";
    var times = [];
    t.true_events.forEach(function (e) { if (e.t !== null) { times.push(e.t); } });
    t.reported_events.forEach(function (e) { if (e.t !== null) { times.push(e.t); } });
    t.frames.forEach(function (f) { if (f.t !== null) { times.push(f.t); } });
    var dur = (typeof t.duration_s === "number" && t.duration_s > 0) ? t.duration_s : 1;
    times.forEach(function (x) { if (x > dur) { dur = x; } });
    var minT = 0;
    times.forEach(function (x) { if (x < minT) { minT = x; } });
    function X(s) { return ML + (s - minT) / (dur - minT) * (W - ML - MR); }
    var w = (typeof t.window_s === "number" && t.window_s > 0) ? t.window_s : 0;

    [["true events", Y_TRUE], ["reported", Y_REP], ["frames sent", Y_FRAMES]].forEach(function (r) {
      var lab = sv("text", { x: ML - 12, y: r[1] + 4, "text-anchor": "end" }, "row-label");
      lab.textContent = r[0];
      svg.appendChild(lab);
      svg.appendChild(sv("line", { x1: ML, x2: W - MR, y1: r[1], y2: r[1] }, "track"));
    });
    var step = niceStep(dur - minT);
    svg.appendChild(sv("line", { x1: ML, x2: W - MR, y1: Y_AXIS, y2: Y_AXIS }, "axis"));
    for (var s = Math.ceil(minT / step) * step; s <= dur + 1e-9; s += step) {
      svg.appendChild(sv("line", { x1: X(s), x2: X(s), y1: Y_AXIS, y2: Y_AXIS + 5 }, "axis"));
      var tl = sv("text", { x: X(s), y: Y_AXIS + 18, "text-anchor": "middle" }, "tick-label");
      tl.textContent = (Math.round(s * 100) / 100) + "s";
      svg.appendChild(tl);
    }
    if (w > 0) {
      t.true_events.forEach(function (e) {
        if (e.t === null) { return; }
        var x0 = Math.max(X(e.t - w), ML), x1 = Math.min(X(e.t + w), W - MR);
        svg.appendChild(titled(sv("rect", { x: x0, y: Y_TRUE - 16, width: Math.max(x1 - x0, 1), height: 32, rx: 3 }, "window"),
          "match window " + num(e.t - w, 2) + "–" + num(e.t + w, 2) + " s"));
      });
    }
    t.frames.forEach(function (f) {
      if (f.t === null) { return; }
      svg.appendChild(titled(sv("line", { x1: X(f.t), x2: X(f.t), y1: Y_FRAMES - 7, y2: Y_FRAMES + 7 }, "frame-tick"),
        "frame #" + show(f.index) + " at " + num(f.t, 2) + " s"));
    });
    var trueMatched = {}, repMatched = {};
    t.matches.forEach(function (m) {
      var a = t.true_events[m[0]], b = t.reported_events[m[1]];
      trueMatched[m[0]] = true; repMatched[m[1]] = true;
      if (a.t === null || b.t === null) { return; }
      svg.appendChild(titled(sv("line", { x1: X(a.t), y1: Y_TRUE + 7, x2: X(b.t), y2: Y_REP - 7 }, "match-line"),
        "true " + num(a.t, 2) + " s ↔ reported " + num(b.t, 2) + " s (Δ " + num(b.t - a.t, 2) + " s)"));
    });
    t.true_events.forEach(function (e, i) {
      if (e.t === null) { return; }
      var c = sv("circle", { cx: X(e.t), cy: Y_TRUE, r: 6 }, "ev-true " + (trueMatched[i] ? "matched" : "missed"));
      c.dataset.idx = i;
      svg.appendChild(titled(c, "true event " + (i + 1) + " at " + num(e.t, 3) + " s, frame " + show(e.frame) +
        (e.state_after !== null && e.state_after !== undefined ? ", state after: " + e.state_after : "")));
    });
    var untimed = 0;
    t.reported_events.forEach(function (e, i) {
      if (e.t === null) { untimed += 1; return; }
      var x = X(e.t), y = Y_REP;
      var p = sv("path", { d: "M" + x + " " + (y - 7) + " L" + (x + 7) + " " + y + " L" + x + " " + (y + 7) + " L" + (x - 7) + " " + y + " Z" },
        "ev-rep " + (repMatched[i] ? "matched" : "unmatched"));
      p.dataset.idx = i;
      svg.appendChild(titled(p, "reported event " + (i + 1) + " at " + num(e.t, 3) + " s" +
        (e.label !== null && e.label !== undefined ? ": " + e.label : "")));
    });
    var note = document.getElementById("detail-untimed");
    note.hidden = untimed === 0;
    note.textContent = untimed ? untimed + " reported event(s) had no usable timestamp and are not drawn." : "";
  }

  function drawFrames(t) {
    var strip = document.getElementById("frame-strip");
    strip.textContent = "";
    document.getElementById("frames-count").textContent = "(" + t.frames.length + ")";
    if (!t.frames.length) { strip.appendChild(el("p", "empty", "No thumbnails were stored for this trial.")); }
    var w = t.window_s || 0;
    t.frames.forEach(function (f) {
      var fig = el("figure", "thumb");
      var near = f.t !== null && t.true_events.some(function (e) { return e.t !== null && Math.abs(e.t - f.t) <= w; });
      if (near) { fig.classList.add("near-event"); }
      var img = document.createElement("img");
      img.alt = "frame " + show(f.index) + " at " + num(f.t, 2) + " s";
      img.src = "data:image/jpeg;base64," + f.jpeg_b64;
      fig.appendChild(img);
      fig.appendChild(el("figcaption", null, "t=" + num(f.t, 2) + "s · #" + show(f.index)));
      strip.appendChild(fig);
    });
  }

  function select(id) {
    var t = data.find(function (x) { return x.trial_id === id; });
    if (!t) { return; }
    selectedId = id;
    Array.from(rowsEl.children).forEach(function (tr) { tr.classList.toggle("selected", tr.dataset.trialId === id); });
    document.getElementById("detail-empty").hidden = true;
    var body = document.getElementById("detail-body");
    body.hidden = false;
    body.dataset.trialId = id;
    document.getElementById("detail-title").textContent = t.model + " · " + t.condition + " · " + t.domain +
      " · N=" + show(t.n_events) + ", F=" + show(t.frequency_hz) + " Hz";
    var dl = document.getElementById("detail-facts");
    dl.textContent = "";
    var K = t.matches.length, M = t.reported_events.length, N = t.true_events.length;
    fact(dl, "answer", show(t.answer));
    fact(dl, "predicted", show(t.predicted_count) + (t.parse_method ? " (" + t.parse_method + ")" : ""));
    fact(dl, "outcome", outcome(t) + (t.status && t.status !== "ok" ? " — " + t.status : ""));
    fact(dl, "matched K / reported M / true N", K + " / " + M + " / " + N);
    fact(dl, "P · R · F1", (M ? num(K / M, 2) : "—") + " · " + (N ? num(K / N, 2) : "—") + " · " + num(t.f1, 2));
    fact(dl, "window ±w", w_text(t.window_s));
    fact(dl, "duration", num(t.duration_s, 2) + " s");
    fact(dl, "sample", show(t.sample_id));
    fact(dl, "trial", show(t.trial_id));
    drawTimeline(t);
    drawFrames(t);
    document.getElementById("raw-text").textContent = t.raw_text || "(empty)";
  }
  function w_text(w) { return (typeof w === "number") ? "±" + num(w, 3) + " s" : "—"; }

  Object.keys(filters).forEach(function (k) { filters[k].addEventListener("change", renderList); });
  renderList();
})();
