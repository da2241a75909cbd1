(function () {
  "use strict";
  // Generic trace viewer. The page carries the suite's ViewerSpec and the kept trials as JSON.
  // Every string that came from a model or a data file reaches the page through textContent, an
  // attribute set by setAttribute, or a property; never through innerHTML.
  // A large viewer keeps only an index here; each trial's details (facts, timeline, frames, text)
  // are in a side file, viewer/NNN.js, added as a script tag when a trial in it is first opened
  // (a page opened from file:// may do that, not fetch). A side file calls vidauditViewerChunk.
  var payload = JSON.parse(document.getElementById("trials-data").textContent);
  var spec = payload.spec || { group_label: "group", columns: [] };
  var data = payload.trials || [];
  if (payload.thumbs) {   // an inline page keeps each distinct thumbnail once; frames name it by index
    data.forEach(function (t) {
      (t.frames || []).forEach(function (f) { f.jpeg_b64 = payload.thumbs[f.jpeg]; });
    });
  }
  var chunks = payload.chunks || null;
  var details = {};   // trial_id -> full trial, once its side file has run
  var chunkState = {}; // chunk number -> "loading" | "done" | error text
  var waiting = {};    // chunk number -> callbacks
  var svg = document.getElementById("timeline");
  var SVGNS = svg.namespaceURI; // the HTML parser put the inline <svg> in the SVG namespace
  var W = 960, ML = 112, MR = 24, Y_TRUE = 48, Y_REP = 118, Y_FRAMES = 160, Y_AXIS = 188;
  var rowsEl = document.getElementById("trial-rows");
  var filters = {
    model: document.getElementById("f-model"),
    condition: document.getElementById("f-condition"),
    group: document.getElementById("f-group"),
    outcome: document.getElementById("f-outcome")
  };
  var selectedId = null;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }
  // A list cell whose text may wrap between the parts of a label (after / : @ # _ = + , and a "." not before a
  // digit: "expectation:|anomaly", "frames#8/|mcq", "not_|judged"), never inside a word or a number: <wbr>
  // elements, so a copied label has no extra character.
  function cell(cls, text) {
    var e = el("td", cls);
    String(text).split(/(?<=[\/:@#_=+,])(?=\S)|(?<=\.)(?=[^\d\s])/).forEach(function (part, i) {
      if (i) { e.appendChild(document.createElement("wbr")); }
      e.appendChild(document.createTextNode(part));
    });
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
  function show(v) {
    if (v === null || v === undefined || v === "") { return "—"; }
    if (typeof v === "boolean") { return v ? "yes" : "no"; }
    if (typeof v === "number") { return isFinite(v) ? String(Math.round(v * 1000) / 1000) : "—"; }
    return String(v);
  }
  function outcome(t) {
    if (t.status && t.status !== "ok") { return "error"; }
    return t.correct === true ? "correct" : "incorrect";
  }

  function fillSelect(sel, key) {
    var values = Array.from(new Set(data.map(function (t) { return t[key]; }))).sort();
    values.forEach(function (v) {
      var o = el("option", null, v === "" ? "(none)" : v);
      o.value = v;
      sel.appendChild(o);
    });
  }
  fillSelect(filters.model, "model");
  fillSelect(filters.condition, "condition");
  fillSelect(filters.group, "group");

  function visible() {
    return data.filter(function (t) {
      return (!filters.model.value || t.model === filters.model.value) &&
        (!filters.condition.value || t.condition === filters.condition.value) &&
        (!filters.group.value || t.group === filters.group.value) &&
        (!filters.outcome.value || outcome(t) === filters.outcome.value);
    });
  }

  function renderList() {
    var list = visible();
    rowsEl.textContent = "";
    list.forEach(function (t) {
      var o = outcome(t);
      var tr = el("tr", "trial-row " + o);
      tr.dataset.trialId = t.trial_id;
      tr.tabIndex = 0;
      [t.model, t.condition, t.group].forEach(function (v) { tr.appendChild(cell(null, show(v))); });
      spec.columns.forEach(function (c) {
        var v = t.columns ? t.columns[c.key] : null;
        tr.appendChild(cell(c.numeric ? "num" : null, show(v)));
      });
      tr.appendChild(el("td", "mark " + o, o === "correct" ? "✓" : (o === "error" ? "!" : "✗")));
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
    var tl = t.timeline;
    var times = [];
    tl.true_events.forEach(function (e) { if (e.t !== null) { times.push(e.t); } });
    tl.reported_events.forEach(function (e) { if (e.t !== null) { times.push(e.t); } });
    t.frames.forEach(function (f) { if (f.t !== null) { times.push(f.t); } });
    var dur = (typeof tl.duration_s === "number" && tl.duration_s > 0) ? tl.duration_s : 1;
    times.forEach(function (x) { if (x > dur) { dur = x; } });
    var minT = 0;
    times.forEach(function (x) { if (x < minT) { minT = x; } });
    function X(s) { return ML + (s - minT) / (dur - minT) * (W - ML - MR); }
    var w = (typeof tl.window_s === "number" && tl.window_s > 0) ? tl.window_s : 0;

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
      var tickLabel = sv("text", { x: X(s), y: Y_AXIS + 18, "text-anchor": "middle" }, "tick-label");
      tickLabel.textContent = (Math.round(s * 100) / 100) + "s";
      svg.appendChild(tickLabel);
    }
    if (w > 0) {
      tl.true_events.forEach(function (e) {
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
    tl.matches.forEach(function (m) {
      var a = tl.true_events[m[0]], b = tl.reported_events[m[1]];
      trueMatched[m[0]] = true; repMatched[m[1]] = true;
      if (a.t === null || b.t === null) { return; }
      svg.appendChild(titled(sv("line", { x1: X(a.t), y1: Y_TRUE + 7, x2: X(b.t), y2: Y_REP - 7 }, "match-line"),
        "true " + num(a.t, 2) + " s ↔ reported " + num(b.t, 2) + " s (Δ " + num(b.t - a.t, 2) + " s)"));
    });
    tl.true_events.forEach(function (e, i) {
      if (e.t === null) { return; }
      var c = sv("circle", { cx: X(e.t), cy: Y_TRUE, r: 6 }, "ev-true " + (trueMatched[i] ? "matched" : "missed"));
      c.dataset.idx = i;
      svg.appendChild(titled(c, "true event " + (i + 1) + " at " + num(e.t, 3) + " s" +
        (e.label !== null && e.label !== undefined && e.label !== "" ? ": " + e.label : "")));
    });
    var untimed = 0;
    tl.reported_events.forEach(function (e, i) {
      if (e.t === null) { untimed += 1; return; }
      var x = X(e.t), y = Y_REP;
      var p = sv("path", { d: "M" + x + " " + (y - 7) + " L" + (x + 7) + " " + y + " L" + x + " " + (y + 7) + " L" + (x - 7) + " " + y + " Z" },
        "ev-rep " + (repMatched[i] ? "matched" : "unmatched"));
      p.dataset.idx = i;
      svg.appendChild(titled(p, "reported event " + (i + 1) + " at " + num(e.t, 3) + " s" +
        (e.label !== null && e.label !== undefined && e.label !== "" ? ": " + e.label : "")));
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
    var tl = t.timeline;
    var w = (tl && typeof tl.window_s === "number") ? tl.window_s : 0;
    t.frames.forEach(function (f) {
      var fig = el("figure", "thumb");
      var near = tl && f.t !== null && tl.true_events.some(function (e) { return e.t !== null && Math.abs(e.t - f.t) <= w; });
      if (near) { fig.classList.add("near-event"); }
      var img = document.createElement("img");
      img.alt = "frame " + show(f.index) + " at " + num(f.t, 2) + " s";
      img.src = "data:image/jpeg;base64," + f.jpeg_b64;
      fig.appendChild(img);
      fig.appendChild(el("figcaption", null, "t=" + num(f.t, 2) + "s · #" + show(f.index)));
      strip.appendChild(fig);
    });
  }

  function chunkFile(n) {
    var s = String(n);
    while (s.length < 3) { s = "0" + s; }
    return chunks.dir + "/" + s + ".js";
  }
  function settle(n, state) {
    chunkState[n] = state;
    var cbs = waiting[n] || [];
    waiting[n] = [];
    cbs.forEach(function (cb) { cb(); });
  }
  window.vidauditViewerChunk = function (token, n, trials) {
    if (!chunks || token !== chunks.token || typeof n !== "number") {
      if (typeof n === "number" && chunkState[n] === "loading") {
        settle(n, chunkFile(n) + " belongs to another report; write the report again to refresh its viewer folder");
      }
      return;
    }
    (trials || []).forEach(function (d) { if (d && byId[d.trial_id]) { details[d.trial_id] = d; } });
    settle(n, "done");
  };
  var byId = {};
  data.forEach(function (t) { byId[t.trial_id] = t; });
  // Calls done(full trial) once the trial's details are here, or failed(message).
  function withDetails(t, done, failed) {
    if (!chunks) { done(t); return; }
    if (details[t.trial_id]) { done(details[t.trial_id]); return; }
    var n = t.chunk;
    var finish = function () {
      if (details[t.trial_id]) { done(details[t.trial_id]); }
      else { failed(chunkState[n] === "done" ? chunkFile(n) + " does not hold this trial; write the report again" : chunkState[n]); }
    };
    if (chunkState[n] !== undefined && chunkState[n] !== "loading") { finish(); return; }
    (waiting[n] = waiting[n] || []).push(finish);
    if (chunkState[n] === "loading") { return; }
    chunkState[n] = "loading";
    var tag = document.createElement("script");
    tag.src = chunkFile(n);
    tag.onload = function () { if (chunkState[n] === "loading") { settle(n, chunkFile(n) + " did not list its trials; write the report again"); } };
    tag.onerror = function () { settle(n, "could not read " + chunkFile(n) + ": keep the " + chunks.dir + "/ folder next to this page"); };
    document.head.appendChild(tag);
  }

  function select(id) {
    var t = byId[id];
    if (!t) { return; }
    selectedId = id;
    Array.from(rowsEl.children).forEach(function (tr) { tr.classList.toggle("selected", tr.dataset.trialId === id); });
    document.getElementById("detail-empty").hidden = true;
    var body = document.getElementById("detail-body");
    body.hidden = false;
    var title = [t.model, t.condition];
    if (t.group) { title.push(t.group); }
    document.getElementById("detail-title").textContent = title.join(" · ");
    document.getElementById("detail-columns").textContent = spec.columns.map(function (c) {
      return c.label + " = " + show(t.columns ? t.columns[c.key] : null);
    }).join(" · ");
    var status = document.getElementById("detail-status");
    if (chunks && !details[id]) {
      clearDetail();
      status.hidden = false;
      status.textContent = "Reading this trial from " + chunkFile(t.chunk) + " …";
    }
    withDetails(t, function (full) {
      if (selectedId !== id) { return; }
      status.hidden = true;
      status.textContent = "";
      drawDetail(full);
      body.dataset.trialId = id;
    }, function (message) {
      if (selectedId !== id) { return; }
      clearDetail();
      status.hidden = false;
      status.textContent = message;
      body.dataset.trialId = id;
    });
  }

  function clearDetail() {
    document.getElementById("detail-facts").textContent = "";
    document.getElementById("timeline-wrap").hidden = true;
    svg.textContent = "";
    document.getElementById("frame-strip").textContent = "";
    document.getElementById("frames-count").textContent = "";
    document.getElementById("raw-text").textContent = "";
  }

  function drawDetail(t) {
    var dl = document.getElementById("detail-facts");
    dl.textContent = "";
    (t.facts || []).forEach(function (kv) { fact(dl, kv[0], kv[1]); });
    fact(dl, "outcome", outcome(t) + (t.status && t.status !== "ok" ? " — " + t.status : ""));
    fact(dl, "sample", show(t.sample_id));
    fact(dl, "trial", show(t.trial_id));
    var wrap = document.getElementById("timeline-wrap");
    wrap.hidden = !t.timeline;
    if (t.timeline) { drawTimeline(t); } else { svg.textContent = ""; }
    drawFrames(t);
    document.getElementById("raw-text").textContent = t.raw_text || "(empty)";
  }

  Object.keys(filters).forEach(function (k) { filters[k].addEventListener("change", renderList); });
  renderList();
})();
