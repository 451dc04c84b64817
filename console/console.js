// The hcprp operations console: lists from the admin listener's in-memory model, live updates from
// its event stream, charts from /metrics. No build step, no dependency.
"use strict";
(() => {
  const PAGE = 50;
  const $ = (id) => document.getElementById(id);
  const state = { tab: "resources", offset: 0, total: 0, subscription: "", search: "", type: "",
                  rows: [], selected: -1, detail: null };
  const series = { rate: [], prop: [], ops: [] };
  let lastScrape = null;

  const esc = (s) => String(s ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
  const fmtAge = (s) => s < 60 ? `${s.toFixed(0)} s` : s < 3600 ? `${(s / 60).toFixed(1)} min` : `${(s / 3600).toFixed(1)} h`;
  const fmtTime = (t) => t ? t.replace("T", " ").replace(/\.\d+Z$/, "Z") : "";

  async function api(path) {
    const r = await fetch(path, { credentials: "same-origin", headers: { Accept: "application/json" } });
    if (r.status === 401) { setLive(false, "token needed: open the console link printed at start-up"); throw new Error("unauthorized"); }
    if (!r.ok) throw new Error(`${path}: ${r.status}`);
    return r.json();
  }

  function setLive(on, text) {
    const el = $("live");
    el.className = "live " + (on ? "on" : "off");
    el.textContent = text;
  }

  async function loadSummary() {
    const s = await api("/admin/console/summary");
    const r = s.resources || {};
    const ops = s.operations || {};
    const flight = Object.entries(ops).filter(([k]) => !["Succeeded", "Failed", "Canceled"].includes(k));
    $("summary").innerHTML =
      `<b>${s.subscriptions}</b> subscriptions · <b>${r.cluster || 0}</b> clusters · <b>${r.nodePool || 0}</b> node pools · ` +
      `<b>${r.externalAuth || 0}</b> external auths · <b>${s.inFlight}</b> operations in flight` +
      (s.inFlight ? ` (oldest ${fmtAge(s.oldestInFlightSeconds)})` : "");
    push(series.ops, s.inFlight);
    $("ops-now").textContent = flight.length ? flight.map(([k, v]) => `${k} ${v}`).join(", ") : "none";
  }

  async function loadSubscriptions() {
    const s = await api("/admin/console/subscriptions");
    const ul = $("sub-list");
    const items = [{ subscription: "", state: "", resources: null }].concat(s.items);
    ul.innerHTML = items.map((x) => {
      const n = x.resources ? Object.values(x.resources).reduce((a, b) => a + b, 0) : null;
      const label = x.subscription ? esc(x.subscription) : "All subscriptions";
      const sub = x.subscription ? `<small>${esc(x.state)} · ${n} resources</small>` : "";
      return `<li><button data-sub="${esc(x.subscription)}" aria-pressed="${x.subscription === state.subscription}">${label}${sub}</button></li>`;
    }).join("");
  }

  // What runs, newest first ("4.21.3 ← 4.20.14" while an upgrade rolls out), else the version asked for.
  function versionText(x) {
    const active = x.activeVersions || [];
    if (!active.length) return esc(x.desiredVersion || "");
    return esc(active.join(" ← ")) + (active.length > 1 ? ' <span class="upgrading">upgrading</span>' : "");
  }

  function conditionsText(conds) {
    if (!conds || !conds.length) return "";
    if (conds.every((c) => c.status === "True")) return `all ${conds.length} True`;
    return conds.filter((c) => c.status !== "True" || c.type === "Available" || c.type === "Ready")
      .slice(0, 3).map((c) => `${esc(c.type)}=${esc(c.status)}${c.reason ? " (" + esc(c.reason) + ")" : ""}`).join(", ");
  }

  async function loadList() {
    const q = new URLSearchParams({ offset: state.offset, limit: PAGE });
    if (state.subscription) q.set("subscription", state.subscription);
    if (state.search) q.set("q", state.search);
    let data;
    if (state.tab === "resources") {
      if (state.type) q.set("type", state.type);
      data = await api("/admin/console/resources?" + q);
      $("thead").innerHTML = "<tr><th>Name</th><th>Type</th><th>Resource group</th><th>State</th><th>Version</th><th>Conditions</th><th>Updated</th></tr>";
    } else {
      q.set("inflight", "1");
      data = await api("/admin/console/operations?" + q);
      $("thead").innerHTML = "<tr><th>Operation</th><th>Request</th><th>Resource</th><th>Status</th><th>Age</th></tr>";
    }
    state.rows = data.items;
    state.total = data.total;
    if (state.offset >= state.total && state.offset > 0) { state.offset = Math.max(0, state.total - PAGE); return loadList(); }
    const rows = $("rows");
    rows.innerHTML = data.items.map((x, i) => state.tab === "resources"
      ? `<tr tabindex="0" data-i="${i}" data-id="${esc(x.id)}"><td>${esc(x.type === "cluster" ? x.name : x.cluster + "/" + x.name)}</td><td>${esc(x.type)}</td>` +
        `<td>${esc(x.resourceGroup)}</td><td class="state ${esc(x.provisioningState)}">${esc(x.provisioningState)}</td>` +
        `<td class="version">${versionText(x)}</td><td class="cond">${conditionsText(x.conditions)}</td><td class="when" title="${esc(fmtTime(x.updated))}">${esc(fmtTime(x.updated).slice(11))}</td></tr>`
      : `<tr tabindex="0" data-i="${i}" data-id="${esc(x.id)}"><td>${esc(x.id.slice(0, 8))}</td><td>${esc(x.request)}</td>` +
        `<td>${esc(x.resourceId.split("/").slice(-1)[0])}</td><td class="state ${esc(x.status)}">${esc(x.status)}</td>` +
        `<td>${fmtAge(x.ageSeconds || 0)}</td></tr>`).join("") ||
      `<tr><td colspan="7">Nothing here${state.search ? " matches “" + esc(state.search) + "”" : ""}.</td></tr>`;
    const last = Math.min(state.offset + PAGE, state.total);
    $("page-info").textContent = state.total ? `${state.offset + 1}–${last} of ${state.total}` : "0 of 0";
    $("prev").disabled = state.offset === 0;
    $("next").disabled = last >= state.total;
    if (state.selected >= state.rows.length) state.selected = state.rows.length - 1;
    markSelected(false);
    if (state.detail) refreshDetail();
  }

  function markSelected(focus) {
    [...$("rows").children].forEach((tr, i) => tr.classList.toggle("sel", i === state.selected));
    if (focus && state.selected >= 0) $("rows").children[state.selected]?.focus();
  }

  async function showOperation(sub, id) {
    const op = await api(`/admin/console/operations/${encodeURIComponent(sub)}/${encodeURIComponent(id)}`);
    const steps = op.timeline.map((t) => `<li><span class="state ${esc(t.status)}">${esc(t.status)}</span> ${esc(fmtTime(t.since))}` +
      (t.seconds !== undefined ? ` · ${t.seconds.toFixed(1)} s` : "") + "</li>").join("");
    return `<h2>Operation ${esc(op.id)}</h2><dl><dt>Request</dt><dd>${esc(op.request)}</dd><dt>Status</dt>` +
      `<dd class="state ${esc(op.status)}">${esc(op.status)}</dd><dt>Resource</dt><dd>${esc(op.resourceId)}</dd>` +
      (op.ageSeconds !== undefined ? `<dt>Age</dt><dd>${fmtAge(op.ageSeconds)}</dd>` : "") +
      (op.error ? `<dt>Error</dt><dd>${esc(op.error.code)}: ${esc(op.error.message)}</dd>` : "") +
      `</dl><h3>Timeline</h3><ol class="timeline">${steps}</ol>`;
  }

  async function refreshDetail() {
    const d = state.detail;
    if (!d) return;
    let html;
    if (d.kind === "operation") {
      html = await showOperation(d.sub, d.id).catch(() => "<p>The operation is gone.</p>");
    } else {
      const r = await api("/admin/console/resources?q=" + encodeURIComponent(d.id) + "&limit=500");
      const x = r.items.find((i) => i.id.toLowerCase() === d.id.toLowerCase());
      if (!x) { html = `<h2>${esc(d.id)}</h2><p>Deleted.</p>`; } else {
        const conds = (x.conditions || []).map((c) => `<li>${esc(c.type)} = ${esc(c.status)} ${c.reason ? "(" + esc(c.reason) + ")" : ""}<br><small>${esc(c.message)}</small></li>`).join("");
        html = `<h2>${esc(x.name)}</h2><dl><dt>Type</dt><dd>${esc(x.type)}</dd><dt>State</dt><dd class="state ${esc(x.provisioningState)}">${esc(x.provisioningState)}</dd>` +
          (x.desiredVersion ? `<dt>Desired version</dt><dd>${esc(x.desiredVersion)}</dd>` : "") +
          ((x.activeVersions || []).length ? `<dt>Active versions</dt><dd>${versionText(x)}</dd>` : "") +
          `<dt>ID</dt><dd>${esc(x.id)}</dd><dt>Location</dt><dd>${esc(x.location)}</dd><dt>Updated</dt><dd>${esc(fmtTime(x.updated))}</dd></dl>` +
          (conds ? `<h3>Conditions</h3><ul>${conds}</ul>` : "") +
          (x.activeOperationId || x.lastOperationId
            ? await showOperation(x.subscription, x.activeOperationId || x.lastOperationId).catch(() => "") : "");
      }
    }
    html += `<p><button id="close-detail">Close (Esc)</button></p>`;
    const el = $("detail");
    el.innerHTML = html;
    el.hidden = false;
  }

  function openSelected() {
    const x = state.rows[state.selected];
    if (!x) return;
    state.detail = state.tab === "resources" ? { kind: "resource", id: x.id } : { kind: "operation", sub: x.subscription, id: x.id };
    refreshDetail();
  }

  // Charts: one line per canvas, the last 60 points.
  function push(arr, v) { arr.push(v); if (arr.length > 60) arr.shift(); }
  function draw(id, data, color) {
    const c = $(id), g = c.getContext("2d");
    g.clearRect(0, 0, c.width, c.height);
    if (data.length < 2) return;
    const max = Math.max(...data, 1e-9);
    g.strokeStyle = color; g.lineWidth = 1.5; g.beginPath();
    data.forEach((v, i) => {
      const x = (i / 59) * (c.width - 2) + 1, y = c.height - 2 - (v / max) * (c.height - 6);
      i ? g.lineTo(x, y) : g.moveTo(x, y);
    });
    g.stroke();
  }
  function sumOf(text, name) {
    let s = 0;
    for (const line of text.split("\n")) {
      if (line.startsWith(name + " ") || line.startsWith(name + "{")) s += parseFloat(line.slice(line.lastIndexOf(" ") + 1)) || 0;
    }
    return s;
  }
  async function scrape() {
    const r = await fetch("/metrics");
    if (!r.ok) return;
    const text = await r.text();
    const now = { t: performance.now() / 1000, req: sumOf(text, "hcprp_frontend_requests_total"),
                  ps: sumOf(text, "hcprp_backend_event_to_commit_seconds_sum"), pc: sumOf(text, "hcprp_backend_event_to_commit_seconds_count") };
    if (lastScrape) {
      const dt = Math.max(now.t - lastScrape.t, 1e-3);
      const rate = (now.req - lastScrape.req) / dt;
      push(series.rate, rate);
      $("rate-now").textContent = rate.toFixed(1);
      const dc = now.pc - lastScrape.pc;
      const prop = dc > 0 ? ((now.ps - lastScrape.ps) / dc) * 1000 : (series.prop.at(-1) ?? 0);
      push(series.prop, prop);
      $("prop-now").textContent = dc > 0 ? `${prop.toFixed(1)} ms` : series.prop.length ? "idle" : "";
    }
    lastScrape = now;
    draw("chart-rate", series.rate, "#0b5cad");
    draw("chart-prop", series.prop, "#a15c07");
    draw("chart-ops", series.ops, "#16794c");
  }

  let pending = null;
  function refreshSoon() {
    if (pending) return;
    pending = setTimeout(() => { pending = null; refresh(); }, 250);
  }
  async function refresh() {
    try { await Promise.all([loadSummary(), loadSubscriptions(), loadList()]); } catch (e) { /* shown in the live badge */ }
  }

  function connect() {
    const es = new EventSource("/admin/console/events");
    es.onopen = () => setLive(true, "live");
    es.onmessage = () => refreshSoon();
    es.addEventListener("reset", () => refreshSoon());
    es.onerror = () => { if (es.readyState === EventSource.CLOSED) { setLive(false, "disconnected"); setTimeout(connect, 2000); } };
  }

  // Events.
  document.addEventListener("click", (e) => {
    const sub = e.target.closest("[data-sub]");
    if (sub) { state.subscription = sub.dataset.sub; state.offset = 0; refresh(); return; }
    const tab = e.target.closest("[data-tab]");
    if (tab) { selectTab(tab.dataset.tab); return; }
    const tr = e.target.closest("tbody tr[data-i]");
    if (tr) { state.selected = +tr.dataset.i; markSelected(false); openSelected(); return; }
    if (e.target.id === "close-detail") closeDetail();
  });
  function selectTab(tab) {
    state.tab = tab; state.offset = 0; state.selected = -1;
    document.querySelectorAll("[data-tab]").forEach((b) => b.setAttribute("aria-selected", String(b.dataset.tab === tab)));
    $("type").disabled = tab !== "resources";
    loadList();
  }
  function closeDetail() { state.detail = null; $("detail").hidden = true; markSelected(true); }
  $("search").addEventListener("input", (e) => { state.search = e.target.value.trim(); state.offset = 0; state.selected = -1; refreshSoon(); });
  $("type").addEventListener("change", (e) => { state.type = e.target.value; state.offset = 0; loadList(); });
  $("prev").addEventListener("click", () => { state.offset = Math.max(0, state.offset - PAGE); loadList(); });
  $("next").addEventListener("click", () => { state.offset += PAGE; loadList(); });
  document.addEventListener("keydown", (e) => {
    const typing = e.target.matches("input, select");
    if (e.key === "Escape") { if (typing) e.target.blur(); else closeDetail(); return; }
    if (typing) { if (e.key === "Enter" || e.key === "ArrowDown") { e.preventDefault(); e.target.blur(); state.selected = 0; markSelected(true); } return; }
    if (e.key === "/") { e.preventDefault(); $("search").focus(); }
    else if (e.key === "j" || e.key === "ArrowDown") { e.preventDefault(); state.selected = Math.min(state.rows.length - 1, state.selected + 1); markSelected(true); }
    else if (e.key === "k" || e.key === "ArrowUp") { e.preventDefault(); state.selected = Math.max(0, state.selected - 1); markSelected(true); }
    else if (e.key === "Enter" && e.target.closest("tbody tr")) { state.selected = +e.target.closest("tbody tr").dataset.i; openSelected(); }
    else if (e.key === "n" && !$("next").disabled) $("next").click();
    else if (e.key === "p" && !$("prev").disabled) $("prev").click();
    else if (e.key === "o") selectTab("operations");
    else if (e.key === "r") selectTab("resources");
  });

  refresh();
  connect();
  scrape();
  setInterval(scrape, 2000);
  setInterval(() => loadSummary().catch(() => {}), 2000);
})();
