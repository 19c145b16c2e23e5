// kelp dashboard: live refresh, row expansion, the detail pane and its resizing.
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
    if (e.target.closest("#pane-close")) closePane();
  });

  // ---- resizing, remembered across reloads
  function setWidth(px) {
    const w = Math.max(280, Math.min(px, window.innerWidth - 200));
    pane.style.width = w + "px";
    return w;
  }
  const saved = parseInt(localStorage.getItem(WIDTH_KEY) || "", 10);
  if (saved > 0) setWidth(saved);
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

  // ---- freshness and live updates
  function tick() {
    const stale = document.getElementById("stale");
    if (stale) {
      fresh.textContent = "stale since " + new Date(stale.dataset.since).toLocaleTimeString();
      fresh.classList.add("stale");
      return;
    }
    const g = Date.parse(fresh.dataset.generated || "");
    if (isNaN(g)) return;
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
        panels.querySelectorAll("tbody.group.open[data-lazy='1']").forEach(function (g) { lazyOpen.push(g); });
        lazyOpen.forEach(function (g) { setGroup(g, true); });
        tick();
        if (selected) await loadPane(selected, tab);
        body.dataset.refreshed = String((parseInt(body.dataset.refreshed || "0", 10)) + 1);
      }
    } finally {
      refreshing = false;
      if (again) { again = false; refresh(); }
    }
  }
  if (window.EventSource) {
    const es = new EventSource(base + "/events");
    let first = true;
    es.addEventListener("update", function (e) {
      if (first) { first = false; if (e.data === fresh.dataset.generated) return; }
      refresh();
    });
    es.addEventListener("open", function () { body.classList.remove("offline"); });
    es.addEventListener("error", function () { body.classList.add("offline"); });
  }

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
