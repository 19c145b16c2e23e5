// kelp dashboard: live refresh, row expansion, the detail pane and its resizing, the row
// filter, and the links between pending pods and their NodePools.
// Served as a file (the Content-Security-Policy allows no inline script).
(function () {
  "use strict";
  const body = document.body;
  const base = body.dataset.base;
  const panels = document.getElementById("panels");
  const pane = document.getElementById("pane");
  const paneBody = document.getElementById("pane-body");
  const resizer = document.getElementById("pane-resizer");
  const fresh = document.getElementById("fresh");
  const WIDTH_KEY = "kelp.paneWidth";
  const expanded = new Set();   // pending pods whose verdicts are shown
  const toggled = new Map();    // NodeClaim groups opened or closed by hand
  let selected = null;
  let tab = "describe";

  // ---- URL state: ?sel=Kind/ns/name&tab=yaml
  function writeUrl() {
    const u = new URL(window.location.href);
    if (selected) { u.searchParams.set("sel", selected); u.searchParams.set("tab", tab); }
    else { u.searchParams.delete("sel"); u.searchParams.delete("tab"); }
    history.replaceState(null, "", u);
  }

  // ---- pane
  function markSelected() {
    panels.querySelectorAll(".row-select.selected").forEach(function (r) { r.classList.remove("selected"); });
    if (!selected) return;
    panels.querySelectorAll(".row-select").forEach(function (r) {
      if (r.dataset.select === selected) r.classList.add("selected");
    });
  }
  function showTab(name) {
    tab = name;
    paneBody.querySelectorAll(".tabs button").forEach(function (b) {
      const on = b.dataset.tab === name;
      b.classList.toggle("active", on);
      b.setAttribute("aria-selected", on ? "true" : "false");
    });
    paneBody.querySelectorAll(".tab-body").forEach(function (t) { t.hidden = t.dataset.tab !== name; });
  }
  // Answers can arrive out of order (two quick clicks, a live refresh): only the latest
  // request for the current selection may fill the pane.
  let paneSeq = 0;
  async function loadPane(sel, keepTab) {
    const seq = ++paneSeq;
    const r = await fetch(base + "/pane?sel=" + encodeURIComponent(sel) + "&tab=" + encodeURIComponent(tab), { credentials: "same-origin" });
    const html = r.ok ? await r.text() : "";
    if (seq !== paneSeq || sel !== selected) return;
    if (!r.ok) {
      paneBody.textContent = "";
      const p = document.createElement("p");
      p.className = "empty";
      p.textContent = sel + ": " + (r.status === 404 ? "no longer exists" : "could not be loaded (" + r.status + ")");
      paneBody.appendChild(p);
      return;
    }
    paneBody.innerHTML = html;
    showTab(keepTab || tab);
  }
  function openPane(sel) {
    selected = sel;
    pane.classList.remove("closed");
    markSelected();
    writeUrl();
    return loadPane(sel);
  }
  function closePane() {
    selected = null;
    pane.classList.add("closed");
    paneBody.textContent = "";
    markSelected();
    writeUrl();
  }
  paneBody.addEventListener("click", function (e) {
    const b = e.target.closest(".tabs button");
    if (b) { showTab(b.dataset.tab); writeUrl(); return; }
    if (e.target.closest("#pane-close")) { closePane(); return; }
    const copy = e.target.closest("button.copy");
    if (copy) copyYaml(copy);
  });
  // The yaml tab's copy button: the clipboard API where the page may use it, else select the text.
  function copyYaml(btn) {
    const tabBody = btn.closest(".tab-body");
    const pre = tabBody && tabBody.querySelector("pre.yaml");
    const status = tabBody && tabBody.querySelector(".copied");
    if (!pre) return;
    const say = function (t) { if (status) status.textContent = t; };
    const select = function () {
      const r = document.createRange();
      r.selectNodeContents(pre);
      const s = window.getSelection();
      s.removeAllRanges();
      s.addRange(r);
      say("selected: press Ctrl+C to copy");
    };
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(pre.textContent).then(function () { say("copied"); }, select);
    } else {
      select();
    }
  }
  // Escape closes the pane (unless it is clearing the filter box).
  document.addEventListener("keydown", function (e) {
    if (e.key !== "Escape" || e.defaultPrevented) return;
    if (e.target === filter && filter.value) { filter.value = ""; applyFilter(); return; }
    if (selected || !pane.classList.contains("closed")) { e.preventDefault(); closePane(); }
  });

  // ---- resizing, remembered across reloads
  // The pane never takes more than 40% of the window (the CSS max-width says the same), so the
  // tables beside it stay readable; a width dragged or saved on a wider window is clamped.
  function setWidth(px) {
    const w = Math.round(Math.max(280, Math.min(px, window.innerWidth * 0.4)));
    pane.style.width = w + "px";
    return w;
  }
  const saved = parseInt(localStorage.getItem(WIDTH_KEY) || "", 10);
  if (saved > 0) setWidth(saved);
  window.addEventListener("resize", function () {
    const want = parseInt(localStorage.getItem(WIDTH_KEY) || "", 10);
    if (want > 0) setWidth(want);
  });
  resizer.addEventListener("pointerdown", function (e) {
    e.preventDefault();
    resizer.setPointerCapture(e.pointerId);
    body.classList.add("resizing");
    function move(ev) { setWidth(window.innerWidth - ev.clientX); }
    function up(ev) {
      resizer.releasePointerCapture(ev.pointerId);
      body.classList.remove("resizing");
      resizer.removeEventListener("pointermove", move);
      resizer.removeEventListener("pointerup", up);
      localStorage.setItem(WIDTH_KEY, String(setWidth(window.innerWidth - ev.clientX)));
    }
    resizer.addEventListener("pointermove", move);
    resizer.addEventListener("pointerup", up);
  });

  // ---- rows: expansion, groups, selection
  function applyState() {
    panels.querySelectorAll("tbody.pod").forEach(function (t) {
      const on = expanded.has(t.dataset.key);
      const detail = t.querySelector("tr.verdicts");
      const btn = t.querySelector(".expander");
      if (detail) detail.hidden = !on;
      if (on && detail && detail.dataset.lazy === "1") loadDetail(t, detail);
      if (btn) btn.setAttribute("aria-expanded", on ? "true" : "false");
      t.classList.toggle("expanded", on);
    });
    panels.querySelectorAll("tbody.group").forEach(function (g) {
      if (toggled.has(g.dataset.pool)) setGroup(g, toggled.get(g.dataset.pool));
    });
    markSelected();
  }
  async function loadDetail(t, detail) {
    detail.dataset.lazy = "loading";
    const [ns, name] = t.dataset.key.split("/");
    const r = await fetch(base + "/pending/" + encodeURIComponent(ns) + "/" + encodeURIComponent(name), { credentials: "same-origin" });
    const cell = detail.lastElementChild;
    if (r.ok) {
      cell.innerHTML = await r.text();
      detail.dataset.lazy = "0";
    } else {
      cell.textContent = "could not load the verdicts (" + r.status + ")";
      detail.dataset.lazy = "1";
    }
  }
  async function setGroup(g, open) {
    g.classList.toggle("open", open);
    if (open && g.dataset.lazy === "1") {
      g.dataset.lazy = "loading";
      const r = await fetch(base + "/nodeclaims/" + encodeURIComponent(g.dataset.pool || "-"), { credentials: "same-origin" });
      if (r.ok) {
        g.querySelectorAll("tr:not(.group-head)").forEach(function (tr) { tr.remove(); });
        g.insertAdjacentHTML("beforeend", await r.text());
        g.dataset.lazy = "0";
        markSelected();
        applyFilter();
      } else {
        g.dataset.lazy = "1";
      }
    }
  }
  panels.addEventListener("click", function (e) {
    const exp = e.target.closest(".expander");
    if (exp) {
      const t = exp.closest("tbody.pod");
      const key = t.dataset.key;
      if (expanded.has(key)) expanded.delete(key); else expanded.add(key);
      applyState();
      return;
    }
    const all = e.target.closest(".load-all");
    if (all) {
      const g = all.closest("tbody.group");
      g.dataset.lazy = "1";
      toggled.set(g.dataset.pool, true);
      setGroup(g, true);
      return;
    }
    const head = e.target.closest("tr.group-head");
    if (head) {
      const g = head.closest("tbody.group");
      const open = !g.classList.contains("open");
      toggled.set(g.dataset.pool, open);
      setGroup(g, open);
      return;
    }
    const row = e.target.closest(".row-select");
    if (row && row.dataset.select) openPane(row.dataset.select);
  });
  panels.addEventListener("keydown", function (e) {
    if (e.key !== "Enter") return;
    const t = e.target.closest(".row-select, tr.group-head");
    if (t) { e.preventDefault(); t.click(); }
  });

  // ---- the filter box: words match a row's text; ns:X and pool:Y match its namespace or pool.
  const filter = document.getElementById("filter");
  const filterCount = document.getElementById("filter-count");
  const FILTERED = "tr.pool, tr.claim, tbody.pod, tr.rollout, tr.ice-row, tr.finding";
  function parseFilter(q) {
    const f = { ns: [], pool: [], words: [] };
    q.trim().toLowerCase().split(/\s+/).filter(Boolean).forEach(function (t) {
      if (t.startsWith("ns:") || t.startsWith("namespace:")) f.ns.push(t.slice(t.indexOf(":") + 1));
      else if (t.startsWith("pool:") || t.startsWith("nodepool:")) f.pool.push(t.slice(t.indexOf(":") + 1));
      else f.words.push(t);
    });
    return f;
  }
  function poolOf(el) {
    if (el.dataset.pool !== undefined) return el.dataset.pool;
    const g = el.closest("tbody.group");
    return g ? g.dataset.pool : "";
  }
  function matches(el, f) {
    if (f.ns.length) {
      // Rows of cluster-scoped objects have no namespace: a namespace filter hides them.
      const ns = (el.dataset.ns || "").toLowerCase();
      if (!f.ns.includes(ns)) return false;
    }
    if (f.pool.length) {
      const pools = poolOf(el).toLowerCase().split(/\s+/);
      if (!f.pool.some(function (p) { return pools.includes(p); })) return false;
    }
    if (f.words.length) {
      const text = (el.textContent + " " + (el.dataset.select || "") + " " + (el.dataset.key || "")).toLowerCase();
      if (!f.words.every(function (w) { return text.includes(w); })) return false;
    }
    return true;
  }
  function applyFilter() {
    const q = filter ? filter.value : "";
    const f = parseFilter(q);
    const on = f.ns.length + f.pool.length + f.words.length > 0;
    let shown = 0, total = 0;
    panels.querySelectorAll(".panel").forEach(function (panel) {
      let pShown = 0, pTotal = 0;
      panel.querySelectorAll(FILTERED).forEach(function (el) {
        const ok = !on || matches(el, f);
        el.classList.toggle("filtered-out", !ok);
        pTotal++;
        if (ok) pShown++;
      });
      // NodeClaim groups: hide a group with no matching row; open it when the filter found rows.
      panel.querySelectorAll("tbody.group").forEach(function (g) {
        const rows = g.querySelectorAll("tr.claim");
        const any = Array.prototype.some.call(rows, function (r) { return !r.classList.contains("filtered-out"); });
        const head = !on || any || (g.dataset.lazy === "1" && matches(g, f));
        g.classList.toggle("filtered-out", !head);
      });
      const count = panel.querySelector("h2 .count");
      if (count && pTotal > 0) count.textContent = on ? pShown + " of " + count.dataset.total : count.dataset.total;
      shown += pShown;
      total += pTotal;
    });
    if (filterCount) filterCount.textContent = on ? shown + " of " + total + " rows" : "";
  }
  if (filter) filter.addEventListener("input", applyFilter);

  // ---- from a pending pod's verdicts to a NodePool's row, and back
  panels.addEventListener("click", function (e) {
    const link = e.target.closest("a.pool-link");
    if (link) {
      const row = document.getElementById("pool-" + link.dataset.pool);
      if (!row) return;
      e.preventDefault();
      e.stopPropagation();
      const back = row.querySelector(".back-link");
      if (back) {
        back.hidden = false;
        back.dataset.to = link.dataset.from;
        back.textContent = "back to " + link.dataset.from;
      }
      panels.querySelectorAll("tr.pool.flash").forEach(function (r) { r.classList.remove("flash"); });
      row.classList.add("flash");
      row.scrollIntoView({ block: "center" });
      return;
    }
    const back = e.target.closest("a.back-link");
    if (back && back.dataset.to) {
      const pod = document.getElementById("pod-" + back.dataset.to);
      e.preventDefault();
      e.stopPropagation();
      back.hidden = true;
      back.closest("tr").classList.remove("flash");
      if (pod) { pod.scrollIntoView({ block: "center" }); const r = pod.querySelector(".row-select"); if (r) r.focus({ preventScroll: true }); }
    }
  }, true);

  // ---- freshness and live updates
  function tick() {
    if (!base) { fresh.textContent = ""; return; }
    const stale = document.getElementById("stale");
    if (stale) {
      fresh.textContent = "stale since " + new Date(stale.dataset.since).toLocaleTimeString();
      fresh.classList.add("stale");
      return;
    }
    const g = Date.parse(fresh.dataset.generated || "");
    if (isNaN(g)) return;
    // A dump (or the demo) is evaluated at its capture time: say when, not how long ago.
    if (fresh.dataset.fixed) {
      fresh.textContent = "as of " + new Date(g).toISOString().replace("T", " ").replace(/:\d\d\.\d+Z$/, " UTC");
      fresh.classList.remove("stale");
      return;
    }
    const s = Math.max(0, Math.round((Date.now() - g) / 1000));
    fresh.textContent = "updated " + (s < 90 ? s + "s" : s < 5400 ? Math.round(s / 60) + "m" : Math.round(s / 3600) + "h") + " ago";
    fresh.classList.toggle("stale", s > 60);
  }
  setInterval(tick, 1000);
  tick();
  let refreshing = false, again = false;
  async function refresh() {
    if (refreshing) { again = true; return; }
    refreshing = true;
    try {
      const r = await fetch(base + "/panels", { credentials: "same-origin" });
      if (r.ok) {
        const generated = r.headers.get("x-kelp-generated");
        const html = await r.text();
        const lazyOpen = [];
        panels.innerHTML = html;
        if (generated) fresh.dataset.generated = generated;
        applyState();
        applyFilter();
        panels.querySelectorAll("tbody.group.open[data-lazy='1']").forEach(function (g) { lazyOpen.push(g); });
        lazyOpen.forEach(function (g) { setGroup(g, true); });
        tick();
        timelineControls();
        await loadTimeline();
        if (selected) await loadPane(selected, tab);
        body.dataset.refreshed = String((parseInt(body.dataset.refreshed || "0", 10)) + 1);
      }
    } finally {
      refreshing = false;
      if (again) { again = false; refresh(); }
    }
  }
  // ---- the timeline's range, pool and lane, over serve's history (only when it keeps one)
  let tl = null; // {range, pool, lane} once one is picked; null: the live 3 hours
  function timelineControls() {
    const sec = document.getElementById("timeline");
    if (!sec || body.dataset.history !== "1" || sec.querySelector(".tl-controls")) return;
    const box = document.createElement("div");
    box.className = "tl-controls";
    ["3h", "1h", "24h", "7d"].forEach(function (r) {
      const b = document.createElement("button");
      b.type = "button";
      b.dataset.range = r;
      b.textContent = r;
      if ((tl ? tl.range : "3h") === r) b.classList.add("active");
      box.appendChild(b);
    });
    const pick = function (cls, all, values, now) {
      const s = document.createElement("select");
      s.className = cls;
      [""].concat(values).forEach(function (v) {
        const o = document.createElement("option");
        o.value = v;
        o.textContent = v || all;
        if (v === now) o.selected = true;
        s.appendChild(o);
      });
      box.appendChild(s);
    };
    const pools = Array.from(panels.querySelectorAll("tr.pool[data-pool]")).map(function (r) { return r.dataset.pool; });
    const lanes = Array.from(sec.querySelectorAll(".lane-label")).map(function (t) { return t.textContent; });
    pick("tl-pool", "every pool", pools, tl ? tl.pool : "");
    pick("tl-lane", "every lane", lanes, tl ? tl.lane : "");
    sec.querySelector("h2").after(box);
  }
  async function loadTimeline() {
    const sec = document.getElementById("timeline");
    if (!tl || !sec) return;
    const q = new URLSearchParams(tl);
    const r = await fetch(base + "/timeline?" + q.toString(), { credentials: "same-origin" });
    if (!r.ok) return;
    const html = await r.text();
    const target = document.getElementById("timeline");
    if (!target) return;
    target.querySelector(".timeline-body").innerHTML = html;
    const n = target.querySelectorAll("circle.mark").length;
    const count = target.querySelector("h2 .count");
    if (count) { count.textContent = n; count.dataset.total = n; }
    const span = target.querySelector(".tl-span");
    if (span) span.textContent = "last " + tl.range + (tl.pool ? ", " + tl.pool : "") + (tl.lane ? ", " + tl.lane : "");
    markSelected();
  }
  function pickTimeline() {
    const sec = document.getElementById("timeline");
    const active = sec.querySelector(".tl-controls button.active");
    const range = active ? active.dataset.range : "3h";
    const pool = sec.querySelector(".tl-pool").value;
    const lane = sec.querySelector(".tl-lane").value;
    // The live 3 hours, every pool and lane: the panel as every pass renders it.
    tl = range === "3h" && !pool && !lane ? null : { range: range === "3h" ? "24h" : range, pool: pool, lane: lane };
    if (tl && range === "3h") {
      // A pool or lane over the live window: the history's 24 h is the nearest it keeps.
      sec.querySelectorAll(".tl-controls button").forEach(function (b) { b.classList.toggle("active", b.dataset.range === "24h"); });
    }
    if (tl) loadTimeline(); else refresh();
  }
  panels.addEventListener("click", function (e) {
    const b = e.target.closest("#timeline .tl-controls button");
    if (!b) return;
    b.parentNode.querySelectorAll("button").forEach(function (x) { x.classList.toggle("active", x === b); });
    pickTimeline();
  });
  panels.addEventListener("change", function (e) {
    if (e.target.closest("#timeline .tl-controls")) pickTimeline();
  });
  timelineControls();

  // No base: the page of a cluster kelp does not serve, with nothing to refresh.
  // The stream ends every few minutes and the browser opens another by itself; a stream
  // refused outright (503: too many open) is closed for good, so it is opened again here,
  // later, with the page refreshed meanwhile.
  function listen() {
    const es = new EventSource(base + "/events");
    // A stream's first event is the pass it found: nothing new if the page shows it.
    let first = true;
    es.addEventListener("update", function (e) {
      if (first) { first = false; if (e.data === fresh.dataset.generated) return; }
      refresh();
    });
    es.addEventListener("open", function () { first = true; body.classList.remove("offline"); });
    es.addEventListener("error", function () {
      body.classList.add("offline");
      if (es.readyState === EventSource.CLOSED) {
        refresh();
        setTimeout(listen, 15000 + Math.random() * 15000);
      }
    });
  }
  if (window.EventSource && base) listen();

  // ---- initial selection from the URL
  const u = new URL(window.location.href);
  const sel = u.searchParams.get("sel");
  if (u.searchParams.get("tab")) tab = u.searchParams.get("tab");
  if (sel) {
    selected = sel;
    markSelected();
    if (!paneBody.firstElementChild) openPane(sel); else { pane.classList.remove("closed"); showTab(tab); }
  }
})();
