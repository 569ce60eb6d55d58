// slurmlet's dashboard: the cluster, the queue and each job, from the controller's API, updated live
// from its event stream. No framework and nothing from elsewhere: everything it needs is this file.
"use strict";

const TOKEN_KEY = "slurmlet.token";
const state = { jobs: [], nodes: [], partitions: [], filters: { user: "", partition: "", state: "", name: "" } };

// ---------------------------------------------------------------- sign-in
function takeTokenFromAddress() {
  const url = new URL(window.location.href);
  const token = url.searchParams.get("token");
  if (token) {
    sessionStorage.setItem(TOKEN_KEY, token);
    url.searchParams.delete("token");  // out of the address bar and the history
    history.replaceState(null, "", url.pathname + url.search + url.hash);
  }
}

function token() { return sessionStorage.getItem(TOKEN_KEY); }

function signedInUser() {
  const t = token();
  if (!t) return null;
  try {
    const body = t.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    const claims = JSON.parse(atob(body + "=".repeat((4 - body.length % 4) % 4)));
    if (typeof claims.exp === "number" && claims.exp * 1000 < Date.now()) return null;
    return typeof claims.sun === "string" ? claims.sun : null;
  } catch (e) {
    return null;
  }
}

async function api(method, path, body) {
  const headers = {};
  if (token()) headers["X-SLURM-USER-TOKEN"] = token();
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const r = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await r.text();
  let doc = null;
  try { doc = text ? JSON.parse(text) : null; } catch (e) { doc = null; }
  if (!r.ok) {
    const d = doc && doc.detail;
    const msg = (d && (d.error || d.message)) || (typeof d === "string" ? d : "") || `${r.status} ${r.statusText}`;
    throw new Error(msg);
  }
  return doc;
}

// ---------------------------------------------------------------- formatting (as squeue/scontrol print)
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "background") e.style.background = v;  // (a style attribute is refused by the page's CSP)
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function duration(secs) {
  if (secs === null || secs === undefined || secs < 0) return "";
  secs = Math.floor(secs);
  const d = Math.floor(secs / 86400), h = Math.floor(secs % 86400 / 3600), m = Math.floor(secs % 3600 / 60), s = secs % 60;
  const two = (n) => String(n).padStart(2, "0");
  if (d) return `${d}-${two(h)}:${two(m)}:${two(s)}`;
  if (h) return `${h}:${two(m)}:${two(s)}`;
  return `${m}:${two(s)}`;
}

function stamp(t) {
  if (!t) return "Unknown";
  const d = new Date(t * 1000), two = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())}T${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
}

function jobId(j) {
  return j.array_job_id !== null && j.array_job_id !== undefined && j.array_task_id !== null
    ? `${j.array_job_id}_${j.array_task_id}` : String(j.job_id);
}

function elapsed(j) {
  if (!j.start_time) return 0;
  const end = j.end_time || Date.now() / 1000;
  return end - j.start_time - (j.suspended_secs || 0);
}

const SHORT = { PENDING: "PD", RUNNING: "R", SUSPENDED: "S", COMPLETING: "CG", COMPLETED: "CD", CANCELLED: "CA",
  FAILED: "F", TIMEOUT: "TO", NODE_FAIL: "NF", PREEMPTED: "PR", OUT_OF_MEMORY: "OOM", CONFIGURING: "CF" };
const ACTIVE = new Set(["PENDING", "RUNNING", "SUSPENDED", "COMPLETING", "CONFIGURING"]);

// a job's colour on the GPU and CPU cells: the same job, the same colour (and its id written in the cell)
function jobColour(id) {
  let h = 0;
  for (const c of String(id)) h = (h * 31 + c.charCodeAt(0)) % 360;
  return `hsl(${h}, 65%, 78%)`;
}

// ---------------------------------------------------------------- pages
function clusterPage() {
  const nodes = state.nodes;
  const running = state.jobs.filter((j) => j.state === "RUNNING" || j.state === "SUSPENDED");
  const gpuHolder = {};  // node -> gpu index -> job
  for (const j of running) {
    for (const [node, ids] of Object.entries(j.gpu_ids || {})) {
      for (const i of ids) (gpuHolder[node] = gpuHolder[node] || {})[i] = j;
    }
  }
  const totals = { alloc: 0, idle: 0, other: 0, total: 0 };
  for (const n of nodes) {
    const s = n.state.toUpperCase();
    totals.total += 1;
    if (s.startsWith("ALLOC") || s.startsWith("MIX")) totals.alloc += 1;
    else if (s.startsWith("IDLE")) totals.idle += 1;
    else totals.other += 1;
  }
  const rows = nodes.map((n) => {
    const gpus = [];
    for (let i = 0; i < (n.gpus || 0); i++) {
      const j = (gpuHolder[n.name] || {})[i];
      gpus.push(el("span", { class: "gpu" + (j ? " held" : ""), background: j ? jobColour(j.job_id) : null,
        title: j ? `GPU ${i}: job ${jobId(j)} (${j.user})` : `GPU ${i}: free`, "data-gpu": i,
        "data-job": j ? j.job_id : null }, j ? el("a", { href: `#/job/${j.job_id}` }, jobId(j)) : `${i}`));
    }
    return el("tr", { "data-node": n.name },
      el("td", {}, n.name),
      el("td", { class: "state state-" + n.state.toLowerCase().replace(/[^a-z]/g, "") }, n.state.toLowerCase()),
      el("td", {}, n.reason || ""),
      el("td", {}, `${n.cpus_alloc}/${n.cpus}`),
      el("td", {}, `${n.alloc_memory}/${n.real_memory} MB`),
      el("td", { class: "gpus" }, gpus.length ? gpus : "—"),
      el("td", {}, (n.partitions || []).join(",")));
  });
  const parts = state.partitions.map((p) => el("tr", {},
    el("td", {}, p.name + (p.default ? "*" : "")), el("td", {}, p.state.toLowerCase()),
    el("td", {}, p.max_time === null ? "infinite" : duration(p.max_time * 60)),
    el("td", {}, p.total_nodes), el("td", {}, p.nodes), el("td", {}, p.preempt_mode)));
  return [
    el("h2", {}, "Nodes"),
    el("p", { id: "totals" }, `NODES(A/I/O/T) ${totals.alloc}/${totals.idle}/${totals.other}/${totals.total}`),
    el("table", { id: "nodes" }, el("thead", {}, el("tr", {}, ["Node", "State", "Reason", "CPUs (alloc/total)",
      "Memory", "GPUs (cell: holding job)", "Partitions"].map((h) => el("th", {}, h)))), el("tbody", {}, rows)),
    el("h2", {}, "Partitions"),
    el("table", { id: "partitions" }, el("thead", {}, el("tr", {}, ["Partition", "Avail", "Time limit", "Nodes",
      "Node list", "Preemption"].map((h) => el("th", {}, h)))), el("tbody", {}, parts)),
  ];
}

function queuePage() {
  const f = state.filters;
  const shown = state.jobs.filter((j) => ACTIVE.has(j.state))
    .filter((j) => !f.user || j.user === f.user)
    .filter((j) => !f.partition || j.partition === f.partition)
    .filter((j) => !f.state || j.state === f.state)
    .filter((j) => !f.name || j.name.includes(f.name));
  const choices = (key) => [...new Set(state.jobs.map((j) => j[key]))].sort();
  const select = (key, label) => el("label", {}, label + " ",
    el("select", { "data-filter": key, onchange: (e) => { f[key] = e.target.value; render(); } },
      el("option", { value: "" }, "all"),
      choices(key).map((v) => el("option", { value: v, selected: v === f[key] ? "selected" : null }, v))));
  const rows = shown.map((j) => el("tr", { "data-job": j.job_id },
    el("td", {}, el("a", { href: `#/job/${j.job_id}` }, jobId(j))),
    el("td", {}, j.partition), el("td", {}, j.name), el("td", {}, j.user),
    el("td", { class: "state state-" + j.state.toLowerCase(), title: j.state }, SHORT[j.state] || j.state),
    el("td", {}, duration(elapsed(j))), el("td", {}, j.num_nodes),
    el("td", {}, j.state === "PENDING" ? `(${j.reason})` : j.nodes),
    el("td", {}, j.priority),
    el("td", {}, j.state === "PENDING" && j.expected_start ? stamp(j.expected_start) : "")));
  return [
    el("h2", {}, "Queue"),
    el("div", { class: "filters" }, select("user", "User"), select("partition", "Partition"), select("state", "State"),
      el("label", {}, "Name ", el("input", { "data-filter": "name", value: f.name,
        oninput: (e) => { f.name = e.target.value; render(true); } }))),
    el("table", { id: "queue" }, el("thead", {}, el("tr", {}, ["JOBID", "PARTITION", "NAME", "USER", "ST", "TIME",
      "NODES", "NODELIST(REASON)", "PRIORITY", "EXPECTED START"].map((h) => el("th", {}, h)))), el("tbody", {}, rows)),
    el("p", { class: "count" }, `${shown.length} jobs`),
  ];
}

async function jobPage(id) {
  let j;
  try {
    j = await api("GET", `/api/v1/jobs/${id}`);
  } catch (e) {
    return [el("h2", {}, `Job ${id}`), el("p", { class: "error" }, e.message)];
  }
  const me = signedInUser();
  const fields = [["JobId", jobId(j)], ["JobName", j.name], ["UserId", `${j.user}(${j.uid})`], ["Account", j.account],
    ["Partition", j.partition], ["JobState", j.state], ["Reason", j.reason], ["Priority", j.priority],
    ["Restarts", j.restarts], ["RunTime", duration(elapsed(j))], ["TimeLimit", j.time_limit ? duration(j.time_limit * 60) : "UNLIMITED"],
    ["SubmitTime", stamp(j.submit_time)], ["StartTime", stamp(j.start_time)], ["EndTime", stamp(j.end_time)],
    ["NodeList", j.nodes || "(null)"], ["BatchHost", j.batch_host || ""], ["NumNodes", j.num_nodes], ["NumCPUs", j.num_cpus],
    ["ExitCode", `${j.exit_code}:${j.exit_signal}`], ["WorkDir", j.workdir], ["StdOut", j.stdout], ["StdErr", j.stderr]];
  const steps = (j.steps || []).map((s) => el("tr", {}, el("td", {}, `${jobId(j)}.${s.step}`), el("td", {}, s.name),
    el("td", {}, s.state), el("td", {}, s.nodes), el("td", {}, s.num_tasks), el("td", {}, `${s.exit_code}:${s.exit_signal || 0}`)));
  // the buttons a user would have in the CLI: their own jobs (the server checks again), in the states it allows
  const mine = me !== null && (me === j.user || me === "root");
  const actions = [];
  const act = (label, method, path, body) => el("button", { "data-action": label.toLowerCase(), onclick: async (e) => {
    e.target.disabled = true;
    try {
      const doc = await api(method, path, body);
      const refused = ((doc && doc.results) || []).find((r) => !r.ok);  // scancel answers per job
      if (refused) message(`${label}: ${refused.error}`, true); else message(`${label}: done`);
    } catch (err) { message(`${label}: ${err.message}`, true); }
    refresh();
  } }, label);
  if (mine && ACTIVE.has(j.state)) actions.push(act("Cancel", "POST", "/api/v1/jobs/cancel", { ids: [j.job_id] }));
  if (mine && j.state === "PENDING" && !j.held) actions.push(act("Hold", "POST", `/api/v1/jobs/${j.job_id}/hold`, {}));
  // (an administrator's hold is theirs to lift)
  if (mine && j.state === "PENDING" && j.held && (j.held !== "admin" || me === "root"))
    actions.push(act("Release", "POST", `/api/v1/jobs/${j.job_id}/release`, {}));
  if (mine && j.batch && j.requeue && (j.state === "RUNNING" || j.state === "SUSPENDED"))
    actions.push(act("Requeue", "POST", `/api/v1/jobs/${j.job_id}/requeue`, {}));
  return [
    el("h2", {}, `Job ${jobId(j)} `, el("span", { class: "state state-" + j.state.toLowerCase() }, j.state)),
    el("div", { class: "actions" }, actions.length ? actions : el("span", { class: "muted" },
      me ? "No action you may take on this job now." : "Sign in to act on your jobs.")),
    el("dl", { id: "job-fields" }, fields.map(([k, v]) => [el("dt", {}, k), el("dd", { "data-field": k }, v)])),
    el("h3", {}, "Steps"),
    el("table", { id: "steps" }, el("thead", {}, el("tr", {}, ["Step", "Name", "State", "Nodes", "Tasks", "ExitCode"]
      .map((h) => el("th", {}, h)))), el("tbody", {}, steps)),
  ];
}

function signInPage() {
  const input = el("input", { id: "token-input", type: "password", autocomplete: "off", size: 60 });
  return [
    el("h2", {}, "Sign in"),
    el("p", {}, "Paste a token from ", el("code", {}, "scontrol token"), ", or open the address ",
      el("code", {}, "slurmlet up"), " printed."),
    el("form", { onsubmit: (e) => { e.preventDefault(); sessionStorage.setItem(TOKEN_KEY, input.value.trim().replace(/^SLURM_JWT=/, "")); location.hash = "#/cluster"; render(); } },
      input, " ", el("button", { type: "submit" }, "Sign in")),
  ];
}

// ---------------------------------------------------------------- rendering and live updates
function message(text, bad) {
  let m = document.getElementById("message");
  if (!m) { m = el("p", { id: "message", role: "status" }); document.getElementById("main").before(m); }
  m.textContent = text;
  m.className = bad ? "error" : "ok";
}

function route() {
  const parts = (location.hash || "#/cluster").slice(2).split("/");
  return { page: parts[0] || "cluster", arg: parts[1] };
}

let rendering = 0, busy = false;
async function render(keepFocus) {
  const n = ++rendering;
  busy = true;
  try { await draw(n, keepFocus); } finally { if (n === rendering) busy = false; }
}

async function draw(n, keepFocus) {
  const { page, arg } = route();
  const me = signedInUser();
  const who = document.getElementById("who");
  who.replaceChildren(me ? el("span", {}, `signed in as ${me} `, el("button", { id: "sign-out", onclick: () => {
    sessionStorage.removeItem(TOKEN_KEY); render(); } }, "Sign out")) : el("a", { href: "#/signin" }, "Sign in"));
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("current", a.dataset.page === page);
  let content;
  if (page === "queue") content = queuePage();
  else if (page === "job" && arg) content = await jobPage(arg);
  else if (page === "signin") content = signInPage();
  else content = clusterPage();
  if (n !== rendering) return;  // a newer render started meanwhile
  const focused = keepFocus && document.activeElement && document.activeElement.dataset.filter;
  const main = document.getElementById("main");
  main.replaceChildren(...content);
  main.dataset.page = page;
  if (focused) {
    const again = main.querySelector(`[data-filter="${focused}"]`);
    if (again) { again.focus(); if (again.setSelectionRange) again.setSelectionRange(again.value.length, again.value.length); }
  }
  document.getElementById("updated").textContent = "updated " + new Date().toLocaleTimeString();
}

let refreshing = null;
async function refresh() {
  if (refreshing) return refreshing;
  refreshing = (async () => {
    try {
      const [jobs, nodes, parts] = await Promise.all([api("GET", "/api/v1/jobs"), api("GET", "/api/v1/nodes"),
        api("GET", "/api/v1/partitions")]);
      state.jobs = jobs.jobs || [];
      state.nodes = nodes.nodes || [];
      state.partitions = parts.partitions || [];
      await render(true);
    } catch (e) {
      message("cannot reach the controller: " + e.message, true);
    } finally {
      refreshing = null;
    }
  })();
  return refreshing;
}

function follow() {
  const live = document.getElementById("live");
  const events = new EventSource("/api/v1/events");
  events.addEventListener("change", () => refresh());
  events.onopen = () => { live.textContent = "● live"; live.className = "on"; };
  events.onerror = () => { live.textContent = "○ reconnecting"; live.className = ""; };
}

window.addEventListener("hashchange", () => render());
window.addEventListener("DOMContentLoaded", async () => {
  takeTokenFromAddress();
  try {
    const cfg = await api("GET", "/api/v1/ping");
    if (cfg && cfg.cluster) document.getElementById("cluster-name").textContent = cfg.cluster;
  } catch (e) { /* the first refresh says so */ }
  await refresh();
  follow();
  // running times tick (not while a list is open or a sign-in is typed)
  setInterval(() => {
    const focus = document.activeElement;
    // (not while a render waits on the controller: a slow answer is not thrown away every second)
    if (!busy && route().page !== "signin" && !(focus && focus.tagName === "SELECT")) render(true);
  }, 1000);
});
