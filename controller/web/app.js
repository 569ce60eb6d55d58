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

// (the lists are everyone's to read, as squeue's are: asked without the token, as index.html's
// preloads ask for them, so the answers those started are the ones used)
// (the fields of each job the lists' pages use; a job's own page asks for the whole of it)
const JOBS_LIST = "/api/v1/jobs?look=1&fields=job_id,array_job_id,array_task_id,name,user,partition,state,reason,priority,start_time,end_time,suspended_secs,num_nodes,nodes,expected_start,array_max_tasks,gpu_ids,comment,restarts,submit_time";
const PUBLIC_LISTS = new Set([JOBS_LIST, "/api/v1/nodes", "/api/v1/partitions"]);

async function api(method, path, body, raw) {
  const headers = {};
  if (token() && !(method === "GET" && PUBLIC_LISTS.has(path))) headers["X-SLURM-USER-TOKEN"] = token();
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
  return raw ? { doc, text, look: r.headers.get("X-Slurmlet-Look") } : doc;
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

// "1 job", "2 jobs"
function counted(n, word) { return `${n} ${word}${n === 1 ? "" : "s"}`; }

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
        "data-job": j ? j.job_id : null }, j ? el("a", { href: `#/job/${j.job_id}` }, jobId(j)) : "free"));
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
      "Memory", "GPUs (each: its job, or free)", "Partitions"].map((h) => el("th", {}, h)))), el("tbody", {}, rows)),
    el("h2", {}, "Partitions"),
    el("table", { id: "partitions" }, el("thead", {}, el("tr", {}, ["Partition", "Avail", "Time limit", "Nodes",
      "Node list", "Preemption"].map((h) => el("th", {}, h)))), el("tbody", {}, parts)),
  ];
}

// the running times a page shows, updated in place each second while its data has not changed
let ticks = [];
function ticking(cell, j) {
  if (j.state === "RUNNING") ticks.push([cell, j]);
  return cell;
}

// a long queue is drawn a window at a time: the rows in sight and some either side, between two
// spacers as tall as the rows left out (each row is ROW_H pixels: one line, see style.css)
const ROW_H = 30, AROUND = 20;

function windowed(box, tbody, items, make) {
  const draw = (at) => {  // (`at`: the scroll position to draw for, before the box has its height)
    const top = at === undefined ? box.scrollTop : at;
    const count = Math.ceil((box.clientHeight || 900) / ROW_H) + 2 * AROUND;
    // (a shorter list than the position was for, after a filter: its end)
    const first = Math.max(0, Math.min(items.length - count, Math.floor(top / ROW_H) - AROUND));
    const last = Math.min(items.length, first + count);
    const spacer = (rows) => {
      if (rows <= 0) return null;
      const tr = el("tr", { class: "spacer", "aria-hidden": "true" }, el("td", { colspan: 10 }));
      tr.style.height = `${rows * ROW_H}px`;
      return tr;
    };
    ticks = [];
    tbody.replaceChildren(...[spacer(first), ...items.slice(first, last).map(make), spacer(items.length - last)].filter(Boolean));
    state.queueScroll = top;
  };
  let queued = false;
  box.addEventListener("scroll", () => {
    if (!queued) { queued = true; requestAnimationFrame(() => { queued = false; draw(); }); }
  });
  return draw;
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
  const row = ({ j, tasks, count, reason }) => el("tr", { "data-job": j.job_id,
      "data-array": tasks ? j.array_job_id : null, title: tasks ? `${count} pending tasks of array ${j.array_job_id}` : null },
    el("td", {}, el("a", { href: `#/job/${j.job_id}` }, tasks ? `${j.array_job_id}_[${tasks}]` : jobId(j))),
    el("td", {}, j.partition), el("td", {}, j.name), el("td", {}, j.user),
    el("td", { class: "state state-" + j.state.toLowerCase(), title: j.state }, SHORT[j.state] || j.state),
    ticking(el("td", {}, duration(elapsed(j))), j), el("td", {}, j.num_nodes),
    el("td", {}, j.state === "PENDING" ? `(${reason || j.reason})` : j.nodes),
    el("td", {}, j.priority),
    el("td", {}, j.state === "PENDING" && j.expected_start ? stamp(j.expected_start) : ""));
  const all = squeueOrder(collapseArrays(shown));
  const rows = el("tbody");
  const box = el("div", { id: "queue-box" }, el("table", { id: "queue" }, el("thead", {}, el("tr", {}, ["JOBID", "PARTITION",
    "NAME", "USER", "ST", "TIME", "NODES", "NODELIST(REASON)", "PRIORITY", "EXPECTED START"].map((h) => el("th", {}, h)))), rows));
  const drawRows = windowed(box, rows, all, row);
  afterMount.push(() => { const at = state.queueScroll || 0; drawRows(at); box.scrollTop = at; });
  return [
    el("h2", {}, "Queue"),
    el("div", { class: "filters" }, select("user", "User"), select("partition", "Partition"), select("state", "State"),
      el("label", {}, "Name ", el("input", { "data-filter": "name", value: f.name,
        oninput: (e) => { f.name = e.target.value; render(true); } }))),
    box,
    el("p", { class: "count" }, counted(shown.length, "job") + (all.length < shown.length ? ` in ${counted(all.length, "row")}` : "")),
  ];
}

// squeue's rows: the pending tasks of one array (same name and partition) are one row, `7885_[0-3,5]`
// (`%2` when throttled), standing where the array's own record or else its first pending task stands
function ranges(ids) {
  const out = [];
  for (const n of [...ids].sort((a, b) => a - b)) {
    const last = out[out.length - 1];
    if (last && n === last[1] + 1) last[1] = n; else out.push([n, n]);
  }
  return out.map(([a, b]) => (a === b ? `${a}` : `${a}-${b}`)).join(",");
}

function collapseArrays(jobs) {
  const isTask = (j) => j.state === "PENDING" && j.array_task_id !== null && j.array_task_id !== undefined;
  const groups = new Map();
  for (const j of jobs.filter(isTask)) {
    const key = `${j.array_job_id}\u0000${j.name}\u0000${j.partition}`;
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(j);
  }
  const lead = new Map();
  for (const members of groups.values()) {
    lead.set(members.find((m) => m.job_id === m.array_job_id) || members[0], members);
  }
  const rows = [];
  for (const j of jobs) {
    if (!isTask(j)) { rows.push({ j }); continue; }
    const members = lead.get(j);
    if (!members) continue;
    const reasons = [...new Set([j, ...members].map((m) => m.reason))];
    rows.push({ j, tasks: ranges(members.map((m) => m.array_task_id)) + (j.array_max_tasks ? `%${j.array_max_tasks}` : ""),
      count: members.length, reason: reasons.join(",") });
  }
  return rows;
}

// squeue's default order (-S P,t,-p: common/render_squeue.py): by partition, by compact state, by
// priority from the highest; rows that tie keep the order they came in
function squeueOrder(rows) {
  const cmp = (a, b) => (a < b ? -1 : a > b ? 1 : 0);
  return rows.sort(({ j: a }, { j: b }) => cmp(a.partition || "", b.partition || "")
    || cmp(SHORT[a.state] || a.state, SHORT[b.state] || b.state) || (b.priority || 0) - (a.priority || 0));
}

// sprio's columns for a pending job (each factor already weighted)
const SPRIO = [["site", "SITE"], ["age", "AGE"], ["assoc", "ASSOC"], ["fairshare", "FAIRSHARE"], ["jobsize", "JOBSIZE"],
  ["partition", "PARTITION"], ["qos", "QOS"], ["nice", "NICE"]];

async function priorityPart(j) {
  if (j.state !== "PENDING") return [];
  let r;
  try { r = await api("GET", `/api/v1/priorities?ids=${j.job_id}`); } catch (e) { return []; }
  const f = (r.jobs || [])[0];
  if (!f) return [el("h3", {}, "Priority"), el("p", { class: "muted" }, "sprio does not list it: it is held or waits for its begin time, or no priority weight is set.")];
  return [el("h3", {}, "Priority (sprio)"),
    el("table", { id: "sprio" }, el("thead", {}, el("tr", {}, ["PRIORITY", ...SPRIO.map((x) => x[1]), "TRES"].map((h) => el("th", {}, h)))),
      el("tbody", {}, el("tr", {}, el("td", { "data-factor": "priority" }, f.priority),
        SPRIO.map(([k]) => el("td", { "data-factor": k }, Math.round(f.factors[k] || 0))),
        el("td", {}, (f.factors.tres || []).map(([t, v]) => `${t}=${Math.round(v)}`).join(",")))))];
}

// sacct -D: each run of the job (a requeued job's earlier ones first)
async function runsPart(j) {
  let r;
  try { r = await api("GET", `/api/v1/jobs?ids=${j.job_id}&history=1&duplicates=1`); } catch (e) { return []; }
  const rows = (r.jobs || []).map((x, i) => el("tr", { "data-run": i },
    el("td", {}, i + 1), el("td", {}, x.state), el("td", {}, stamp(x.start_time)), el("td", {}, x.end_time ? stamp(x.end_time) : ""),
    el("td", {}, duration(elapsed(x))), el("td", {}, `${x.exit_code}:${x.exit_signal}`), el("td", {}, x.nodes || "")));
  return [el("h3", {}, "Runs (sacct -D)"), el("table", { id: "runs" }, el("thead", {}, el("tr", {},
    ["Run", "State", "Start", "End", "Elapsed", "ExitCode", "NodeList"].map((h) => el("th", {}, h)))), el("tbody", {}, rows))];
}

// scontrol's StartTime and EndTime (cli/render_scontrol.py): a pending job's expected start and its end
// a time limit after; a started job's end, else its start plus its limit (and the time it was suspended)
function startEnd(j) {
  const start = j.start_time || j.expected_start, limit = j.time_limit;
  let end = j.end_time;
  if (!end && j.start_time && limit !== null && limit !== undefined && j.state !== "PENDING")
    end = j.start_time + limit * 60 + (j.suspended_secs || 0);
  let endText = (limit === null || limit === undefined) && (!end || end > Date.now() / 1000) ? "Unknown" : stamp(end);
  if (start && j.state === "PENDING" && limit !== null && limit !== undefined) endText = stamp(start + limit * 60);
  return [["StartTime", stamp(start)], ["EndTime", endText]];
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
    ["SubmitTime", stamp(j.submit_time)], ...startEnd(j),
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
  // (read in the background: a slow node holds up neither this page nor its ticks)
  // (a job that has not started has no output or samples yet: the page says so rather than ask)
  const started = j.state !== "PENDING" && Boolean(j.nodes);
  const notYet = () => el("p", { class: "muted" }, "The job has not started.");
  const out = mine && started ? followOutput(j) : null, use = mine && started ? followUsage(j) : null;
  const only = (what) => el("p", { class: "muted" }, `Only the job's owner and administrators see its ${what}.`);
  const [prio, runs] = await Promise.all([priorityPart(j), runsPart(j)]);
  return [
    el("h2", {}, `Job ${jobId(j)} `, el("span", { class: "state state-" + j.state.toLowerCase() }, j.state)),
    el("div", { class: "actions" }, actions.length ? actions : el("span", { class: "muted" },
      me ? "No action you may take on this job now." : "Sign in to act on your jobs.")),
    el("dl", { id: "job-fields" }, fields.map(([k, v]) => el("div", {}, el("dt", {}, k), el("dd", { "data-field": k }, v)))),
    el("h3", {}, "Steps"),
    steps.length ? el("table", { id: "steps" }, el("thead", {}, el("tr", {}, ["Step", "Name", "State", "Nodes", "Tasks", "ExitCode"]
      .map((h) => el("th", {}, h)))), el("tbody", {}, steps))
      : el("p", { class: "muted", id: "no-steps" }, started ? "No steps." : "No steps: the job has not started."),
    ...prio, ...runs,
    el("h3", {}, "CPU and memory"),
    use ? use.box : mine ? notYet() : only("usage"),
    el("h3", {}, "Output"),
    out ? out.box : mine ? notYet() : only("output"),
  ];
}

// ---------------------------------------------------------------- a job's output, followed live
// What the page has of each job's output: kept across renders (the element too, with its scroll);
// read from the batch host (with the job's user's rights) from where the last read ended.
const OUTPUT_KEEP = 256 * 1024;  // characters shown at most: the file's last ones
const outputs = {};

function followOutput(j) {
  let o = outputs[j.job_id];
  if (!o) {
    o = outputs[j.job_id] = { end: -1, start: 0, text: "", decoder: new TextDecoder("utf-8"), follow: true, done: false,
      pre: el("pre", { id: "output", tabindex: 0 }), head: el("p", { class: "muted", id: "output-head" }) };
    o.pre.addEventListener("scroll", () => {
      o.follow = o.pre.scrollTop + o.pre.clientHeight >= o.pre.scrollHeight - 4;
      o.scroll = o.pre.scrollTop;
    });
    o.box = el("div", { class: "output" }, o.head, o.pre);
  }
  // while it may still write, and once more after its end (what it wrote last)
  maybeRead(o, j);
  afterMount.push(() => { o.pre.scrollTop = o.follow ? o.pre.scrollHeight : o.scroll || 0; });
  return o;
}

// (after a failure, a node silent or busy, once more every few seconds: an ended job's file too)
function maybeRead(o, j) {
  if (!o.done && !o.busy && Date.now() - (o.failedAt || 0) > 5000) readOutput(o, j);
}

async function readOutput(o, j) {
  const ended = !ACTIVE.has(j.state);
  o.busy = true;
  o.failedAt = 0;
  try {
    // a burst: read on until caught up, a piece at a time (the most one read carries: the route's
    // default), first the file's last piece, then from where the last read ended
    for (let round = 0; round < 8; round++) {
      const r = await api("GET", `/api/v1/jobs/${j.job_id}/output?${o.query ? o.query + "&" : ""}offset=${o.end}`);
      if (r.error) { o.head.textContent = r.error; o.failedAt = Date.now(); break; }
      if (r.size < o.end) {  // emptied (a new run, or by hand): from its end again
        Object.assign(o, { end: -1, start: 0, text: "", decoder: new TextDecoder("utf-8") });
        continue;
      }
      const bytes = Uint8Array.from(atob(r.data), (c) => c.charCodeAt(0));
      if (o.end < 0) o.start = r.offset;
      o.text += o.decoder.decode(bytes, { stream: true });
      if (o.text.length > OUTPUT_KEEP || (o.end < 0 && o.start > 0)) {  // its last lines, each whole
        const from = Math.max(0, o.text.length - OUTPUT_KEEP), nl = o.text.indexOf("\n", from);
        const cut = nl >= 0 && nl < from + 4096 ? nl + 1 : from;
        o.start += new TextEncoder().encode(o.text.slice(0, cut)).length;  // (the bytes not shown)
        o.text = o.text.slice(cut);
      }
      o.end = r.offset + bytes.length;
      o.head.textContent = `${r.path} on ${r.node}: ${r.size} bytes` + (ended ? "" : ", following");
      if (o.end >= r.size || !bytes.length) break;
    }
    if (ended && !o.failedAt) o.done = true;
  } catch (e) {
    o.head.textContent = e.message;
    o.failedAt = Date.now();
  } finally {
    o.busy = false;
  }
  const shown = (o.start > 0 ? `[… the first ${o.start} bytes are not shown]\n` : "") + o.text;
  if (o.pre.textContent !== shown) {
    o.pre.textContent = shown;
    if (o.follow) o.pre.scrollTop = o.pre.scrollHeight;
  }
}

// ---------------------------------------------------------------- a job's CPU and memory, plotted
const usages = {};
const USAGE_EVERY = 5000;  // ms between looks while the job runs
const SVG = "http://www.w3.org/2000/svg";

function svg(tag, attrs, ...children) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

// per node: resident memory (MB, the sum of its process trees while each runs) and CPU in use
// (cores: the sum of each tree's own rate, what its CPU-seconds grew by over the time between two of
// its samples; the trees are sampled apart, so no rate is taken across two trees' samples)
function nodeCurves(series) {
  const times = [...new Set(series.flatMap((s) => s.points.map((p) => p[0])))].sort((a, b) => a - b);
  const at = (points, t, k, before, after) => {
    if (!points.length || t < points[0][0]) return before;
    if (t > points[points.length - 1][0]) return after === undefined ? points[points.length - 1][k] : after;
    let v = points[0][k];
    for (const p of points) { if (p[0] > t) break; v = p[k]; }
    return v;
  };
  // (a tree still running counts at its latest sample until its next one; one that ended, no more)
  const mem = times.map((t) => [t, series.reduce((a, s) => a + at(s.points, t, 1, 0, s.live ? undefined : 0), 0) / 1024]);
  // a tree's rate over (t[i-1], t[i]] is its CPU growth over that span; before its second sample, none;
  // after its last, its last rate while it runs, else none
  const rate = (points, t) => {
    const i = points.findIndex((p) => p[0] >= t);
    if (i === 0 || points.length < 2) return 0;
    const [a, b] = i < 0 ? points.slice(-2) : [points[i - 1], points[i]];
    return Math.max(0, (b[2] - a[2]) / Math.max(1e-3, b[0] - a[0]));
  };
  const first = Math.min(...series.filter((s) => s.points.length > 1).map((s) => s.points[1][0]));
  const ended = (s, t) => !s.live && (!s.points.length || t > s.points[s.points.length - 1][0]);
  const cpu = times.filter((t) => t >= first).map((t) => [t, series.reduce((a, s) => a + (ended(s, t) ? 0 : rate(s.points, t)), 0)]);
  return { mem, cpu };
}

const DASHES = ["", "6 3", "2 2", "8 3 2 3"];

// `marks`: each point a mark of its own (a circle, for the second curve a square), no line between:
// for events (the scheduler's passes), where a line would say something of the time between them
function plot(id, title, unit, curves, marks) {
  const W = 560, H = 150, L = 48, B = 20;
  const all = Object.values(curves).flat();
  if (!all.length) return el("p", { class: "muted", id }, `${title}: not enough samples yet.`);
  const t0 = Math.min(...all.map((p) => p[0])), t1 = Math.max(...all.map((p) => p[0]));
  const top = Math.max(1e-9, ...all.map((p) => p[1])) * 1.1;
  const x = (t) => L + (W - L - 8) * (t1 > t0 ? (t - t0) / (t1 - t0) : 1);
  const y = (v) => 8 + (H - B - 8) * (1 - v / top);
  const g = svg("svg", { viewBox: `0 0 ${W} ${H}`, class: "plot", id, role: "img",
    "aria-label": `${title} over ${duration(t1 - t0)}` });
  g.append(svg("title", {}, title));
  g.append(svg("line", { x1: L, y1: y(0), x2: W - 8, y2: y(0), class: "axis" }));
  g.append(svg("line", { x1: L, y1: 8, x2: L, y2: y(0), class: "axis" }));
  g.append(svg("text", { x: L - 4, y: 16, "text-anchor": "end" }, (top / 1.1).toFixed(top < 10 ? 2 : 0)));
  g.append(svg("text", { x: L - 4, y: y(0), "text-anchor": "end" }, "0"));
  const when = (t) => (t1 - t0 > 43200 ? stamp(t).slice(5, 16).replace("T", " ") : stamp(t).slice(11));
  g.append(svg("text", { x: L, y: H - 4 }, when(t0)));
  g.append(svg("text", { x: W - 8, y: H - 4, "text-anchor": "end" }, when(t1)));
  g.append(svg("text", { x: L + 6, y: 18, class: "plot-title" }, `${title} (${unit})`));
  Object.entries(curves).forEach(([node, pts], i) => {
    if (!pts.length) return;
    if (marks) {
      g.append(svg("g", { class: `marks curve-${i % 4}`, "data-node": node }, ...pts.map((p) => (i % 2
        ? svg("rect", { x: (x(p[0]) - 2.5).toFixed(1), y: (y(p[1]) - 2.5).toFixed(1), width: 5, height: 5, class: "dot" })
        : svg("circle", { cx: x(p[0]).toFixed(1), cy: y(p[1]).toFixed(1), r: 3, class: "dot" })))));
      return;
    }
    if (pts.length === 1) g.append(svg("circle", { cx: x(pts[0][0]), cy: y(pts[0][1]), r: 3, class: `dot curve-${i % 4}` }));
    g.append(svg("polyline", { points: pts.map((p) => `${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(" "),
      class: `curve curve-${i % 4}`, "stroke-dasharray": DASHES[Math.floor(i / 4) % DASHES.length], "data-node": node }));
  });
  return g;
}

function followUsage(j) {
  let u = usages[j.job_id];
  if (!u) {
    u = usages[j.job_id] = { at: 0, done: false, box: el("div", { class: "usage", id: "usage" },
      el("p", { class: "muted" }, "Asking the nodes…")) };
  }
  const ended = !ACTIVE.has(j.state);
  if (!u.done && !u.busy && Date.now() - u.at >= (ended ? 0 : USAGE_EVERY) && j.nodes) readUsage(u, j, ended);
  return u;
}

async function readUsage(u, j, ended) {
  u.busy = true;
  u.at = Date.now();
  try {
    const r = await api("GET", `/api/v1/jobs/${j.job_id}/usage`);
    const mem = {}, cpu = {};
    for (const [node, series] of Object.entries(r.nodes)) ({ mem: mem[node], cpu: cpu[node] } = nodeCurves(series));
    const nodes = Object.keys(mem).filter((n) => mem[n].length);
    if (!nodes.length) {
      u.box.replaceChildren(el("p", { class: "muted" }, r.silent.length ? `No answer from ${r.silent.join(",")}.`
        : "No samples (yet)."));
    } else {
      const last = (n) => mem[n][mem[n].length - 1][1];
      u.box.replaceChildren(
        el("div", { class: "plots" }, plot("plot-mem", "Memory", "MB", mem), plot("plot-cpu", "CPU", "cores", cpu)),
        el("ul", { class: "legend" }, nodes.map((n, i) => el("li", { "data-node": n },
          el("span", { class: `swatch curve-${i % 4}` }), `${n}: ${last(n).toFixed(0)} MB at the latest sample` +
          (DASHES[Math.floor(i / 4) % DASHES.length] ? " (dashed)" : "")))));
    }
    if (ended) u.done = true;
  } catch (e) {
    u.box.replaceChildren(el("p", { class: "error" }, e.message));
  } finally {
    u.busy = false;
  }
}

// ---------------------------------------------------------------- air runs
// the statuses `air` shows (cli/air.py)
const AIR_STATUS = { PENDING: "QUEUED", RUNNING: "RUNNING", SUSPENDED: "SUSPENDED", COMPLETING: "RUNNING",
  COMPLETED: "SUCCEEDED", FAILED: "FAILED", TIMEOUT: "FAILED", NODE_FAIL: "FAILED", OUT_OF_MEMORY: "FAILED",
  BOOT_FAIL: "FAILED", DEADLINE: "FAILED", CANCELLED: "CANCELLED", PREEMPTED: "CANCELLED" };
const isRun = (j) => (j.comment || "").startsWith("air: ");

function runsPage() {
  const runs = state.jobs.filter(isRun).sort((a, b) => b.job_id - a.job_id);
  const rows = runs.map((j) => el("tr", { "data-run": j.job_id },
    el("td", {}, el("a", { href: `#/run/${j.job_id}` }, j.job_id)), el("td", {}, j.name),
    el("td", { class: "state state-" + j.state.toLowerCase(), title: j.state }, AIR_STATUS[j.state] || j.state),
    el("td", {}, j.comment.split(" ")[1]), el("td", {}, (j.restarts || 0) + 1),
    el("td", {}, stamp(j.submit_time)), ticking(el("td", {}, duration(elapsed(j))), j)));
  return [el("h2", {}, "Runs"),
    el("p", { class: "muted" }, "Workloads submitted with ", el("code", {}, "air run"), " (those the controller still lists)."),
    el("table", { id: "runs-list" }, el("thead", {}, el("tr", {}, ["ID", "EXPERIMENT", "STATUS", "ACCELERATORS", "ATTEMPTS",
      "CREATED", "DURATION"].map((h) => el("th", {}, h)))), el("tbody", {}, rows)),
    el("p", { class: "count" }, counted(runs.length, "run"))];
}

// one run: its attempts, each node's log of the chosen attempt (followed live), its MLflow run
const runView = {};

async function runPage(id) {
  let j;
  try { j = await api("GET", `/api/v1/jobs/${id}`); } catch (e) { return [el("h2", {}, `Run ${id}`), el("p", { class: "error" }, e.message)]; }
  const attempts = (j.restarts || 0) + 1;
  const v = runView[id] = runView[id] || { node: 0, attempt: attempts, logs: {}, mlflow: {} };
  const nodes = j.node_list || [];
  const key = `${v.node}/${v.attempt}`;
  let log = v.logs[key];
  if (!log) {
    log = v.logs[key] = { end: -1, start: 0, text: "", decoder: new TextDecoder("utf-8"), follow: true, done: false,
      pre: el("pre", { id: "output", tabindex: 0 }), head: el("p", { class: "muted", id: "output-head" }),
      query: `air_node=${v.node}&attempt=${v.attempt}` };
    log.pre.addEventListener("scroll", () => {
      log.follow = log.pre.scrollTop + log.pre.clientHeight >= log.pre.scrollHeight - 4;
      log.scroll = log.pre.scrollTop;
    });
    log.box = el("div", { class: "output" }, log.head, log.pre);
  }
  const live = v.attempt === attempts && ACTIVE.has(j.state);
  if (nodes.length) maybeRead(log, live ? j : Object.assign({}, j, { state: "COMPLETED" }));
  afterMount.push(() => { log.pre.scrollTop = log.follow ? log.pre.scrollHeight : log.scroll || 0; });
  // (asked again every 10 s until found: a run starts tracking once it runs, and a node may be busy)
  const m = v.mlflow[v.attempt] = v.mlflow[v.attempt] || { at: 0, run: null };
  if (!m.run && nodes.length && Date.now() - m.at > 10000) {
    m.at = Date.now();
    try {
      const r = await api("GET", `/api/v1/jobs/${id}/output?which=mlflow&attempt=${v.attempt}`);
      if (!r.error) m.run = JSON.parse(atob(r.data));
    } catch (e) { /* not tracked, or not readable */ }
  }
  const ml = m.run;
  const mlLink = ml && typeof ml.uri === "string" && /^https?:\/\//.test(ml.uri)
    ? el("a", { id: "mlflow", href: `${ml.uri.replace(/\/$/, "")}/#/experiments/${encodeURIComponent(ml.experiment_id)}/runs/${encodeURIComponent(ml.run_id)}`,
      target: "_blank", rel: "noopener noreferrer" }, `MLflow run ${ml.run_id} at ${ml.uri}`)  // (the address in sight: the run's user wrote it)
    : ml ? el("span", { id: "mlflow" }, `MLflow run ${ml.run_id} in ${ml.uri}`) : el("span", { class: "muted" }, "no MLflow tracking");
  const choose = (what, n) => () => { v[what] = n; render(); };
  return [
    el("h2", {}, `Run ${id} `, el("span", { class: "state state-" + j.state.toLowerCase() }, AIR_STATUS[j.state] || j.state)),
    el("dl", { id: "job-fields" }, [["Experiment", j.name], ["Accelerators", (j.comment || "").split(" ")[1] || ""],
      ["Attempts", attempts], ["Nodes", nodes.join(", ") || "(none yet)"], ["Created", stamp(j.submit_time)],
      ["Started", stamp(j.start_time)], ["Ended", stamp(j.end_time)], ["Duration", duration(elapsed(j))],
      ["ExitCode", `${j.exit_code}:${j.exit_signal}`], ["Tracking", mlLink], ["Job", el("a", { href: `#/job/${id}` }, `job ${id}`)]]
      .map(([k, x]) => el("div", {}, el("dt", {}, k), el("dd", { "data-field": k }, x)))),
    el("div", { class: "filters" },
      el("span", {}, "Attempt ", Array.from({ length: attempts }, (_, i) => el("button", { "data-attempt": i + 1,
        class: v.attempt === i + 1 ? "current" : null, onclick: choose("attempt", i + 1) }, i + 1))),
      el("span", {}, "Node ", nodes.map((n, i) => el("button", { "data-node": i, class: v.node === i ? "current" : null,
        onclick: choose("node", i) }, `${i} (${n})`)))),
    el("h3", {}, `Log of node ${v.node}, attempt ${v.attempt}`),
    nodes.length ? log.box : el("p", { class: "muted" }, "The run has not started."),
  ];
}

// ---------------------------------------------------------------- the scheduler (sdiag over time)
const cached = {};  // page data fetched at most every `every` ms: name -> {at, data, busy}

async function every(name, ms, fetcher) {
  const c = cached[name] = cached[name] || { at: 0, data: null };
  if (!c.busy && Date.now() - c.at >= ms) {
    c.busy = true;
    try { c.data = await fetcher(); c.at = Date.now(); c.error = null; } catch (e) { c.error = e.message; } finally { c.busy = false; }
  }
  return c;
}

async function schedulerPage() {
  const c = await every("diag", 5000, () => api("GET", "/api/v1/diag?history=1"));
  if (!c.data) return [el("h2", {}, "Scheduler"), el("p", { class: "error" }, c.error || "…")];
  const d = c.data, hist = d.history || [];
  const by = (kind, k) => hist.filter((h) => h[1] === kind).map((h) => [h[0], h[k]]);
  const kinds = (k) => Object.fromEntries(["main", "backfill"].map((kind) => [kind, by(kind, k)]));
  const row = (name, p) => el("tr", { "data-pass": name }, el("td", {}, name), el("td", {}, p.cycles), el("td", {}, p.last_cycle_us),
    el("td", {}, p.max_cycle_us), el("td", {}, p.mean_cycle_us), el("td", {}, p.last_depth), el("td", {}, p.mean_depth),
    el("td", {}, p.last_queue_length), el("td", {}, p.last_cycle_when ? stamp(p.last_cycle_when) : ""));
  return [
    el("h2", {}, "Scheduler"),
    el("p", { class: "muted" }, `sdiag since ${stamp(d.started)}: ${counted(d.jobs_started, "job")} started, ${d.backfilled_jobs} by backfill, `
      + `${d.preempted_jobs} preempted; ${counted(d.skipped, "wake-up")} with nothing to do. Backfill ${d.backfill_enabled ? `every ${d.bf_interval} s` : "off"}.`),
    el("table", { id: "sdiag" }, el("thead", {}, el("tr", {}, ["Pass", "Cycles", "Last (µs)", "Max (µs)", "Mean (µs)",
      "Last depth", "Mean depth", "Queue", "Last cycle"].map((h) => el("th", {}, h)))),
      el("tbody", {}, row("main", d.main), row("backfill", d.backfill))),
    el("h3", {}, hist.length === 1 ? "The last pass" : `The last ${hist.length} passes`),
    hist.length ? el("div", { class: "plots" }, plot("plot-cycle", "Cycle time", "µs", kinds(2), true),
      plot("plot-depth", "Jobs examined", "jobs", kinds(3), true), plot("plot-started", "Jobs started per pass", "jobs", kinds(5), true))
      : el("p", { class: "muted" }, "No pass yet."),
    el("ul", { class: "legend" }, ["main (circles)", "backfill (squares)"].map((k, i) => el("li", {}, el("span", { class: `swatch curve-${i}` }), k))),
  ];
}

// ---------------------------------------------------------------- accounting (sreport, sshare)
const WINDOWS = { hour: 3600, day: 86400, week: 7 * 86400 };
const BUCKETS = 24;

// the accounts' CPU time: the sum of their users' (every user of the window, as the API answers them)
function topAccounts(top) {
  const by = new Map();
  for (const t of top) by.set(t.account, (by.get(t.account) || 0) + t.used);
  return [...by.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
}

async function accountingPage() {
  const win = state.window || "day";
  const span = WINDOWS[win];
  const c = await every("acct-" + win, 30000, async () => {
    const end = Math.floor(Date.now() / 1000), start = end - span;
    const [cpu, gpu, shares] = await Promise.all([
      api("GET", `/api/v1/reports/usage?start=${start}&end=${end}&top=100000&buckets=${BUCKETS}`),
      api("GET", `/api/v1/reports/usage?start=${start}&end=${end}&top=0&buckets=${BUCKETS}&tres=gres/gpu`),
      api("GET", "/api/v1/shares")]);
    return { cpu, gpu, shares };
  });
  const pick = el("div", { class: "filters" }, "Window ", Object.keys(WINDOWS).map((w) => el("button", { "data-window": w,
    class: w === win ? "current" : null, onclick: () => { state.window = w; render(); } }, `last ${w}`)));
  if (!c.data) return [el("h2", {}, "Accounting"), pick, el("p", { class: c.error ? "error" : "muted" }, c.error || "…")];
  const { cpu: whole, gpu, shares } = c.data;
  const hours = (secs) => secs / 3600;
  const pct = (x, of) => (of ? (100 * x / of).toFixed(2) + "%" : "—");
  const part = (r, what, id) => [
    el("p", { id: `utilization-${id}` }, `${what} hours, ${stamp(r.start)} – ${stamp(r.end)}: allocated ${hours(r.allocated).toFixed(2)} `
      + `(${pct(r.allocated, r.reported)}), idle ${hours(r.idle).toFixed(2)} (${pct(r.idle, r.reported)}), reported ${hours(r.reported).toFixed(2)}.`),
    r.reported ? plot(`plot-${id}`, `${what} hours per ${duration(WINDOWS[win] / BUCKETS)}`, `${what} hours`,
      { allocated: r.series.map((p) => [p.end, hours(p.allocated)]), idle: r.series.map((p) => [p.end, hours(p.idle)]) })
      : el("p", { class: "muted" }, `No ${what}s in the cluster.`)];
  return [
    el("h2", {}, "Accounting"), pick,
    el("p", {}, `Cluster ${whole.cluster}, as sreport cluster utilization counts it (-T cpu, -T gres/gpu):`),
    el("div", { class: "plots" }, el("div", {}, part(whole, "CPU", "util")), el("div", {}, part(gpu, "GPU", "gpu"))),
    el("ul", { class: "legend" }, ["allocated", "idle"].map((k, i) => el("li", {}, el("span", { class: `swatch curve-${i}` }), k))),
    el("h3", {}, "Top users (sreport user topusage)"),
    el("table", { id: "top-users" }, el("thead", {}, el("tr", {}, ["User", "Account", "CPU hours", "Share of allocated"].map((h) => el("th", {}, h)))),
      el("tbody", {}, whole.top.slice(0, 10).map((t) => el("tr", { "data-user": t.user }, el("td", {}, t.user), el("td", {}, t.account),
        el("td", {}, hours(t.used).toFixed(2)), el("td", {}, whole.allocated ? (100 * t.used / whole.allocated).toFixed(1) + "%" : ""))))),
    el("h3", {}, "Top accounts"),
    el("table", { id: "top-accounts" }, el("thead", {}, el("tr", {}, ["Account", "CPU hours", "Share of allocated"].map((h) => el("th", {}, h)))),
      el("tbody", {}, topAccounts(whole.top).slice(0, 10).map(([a, secs]) => el("tr", { "data-account": a }, el("td", {}, a),
        el("td", {}, hours(secs).toFixed(2)), el("td", {}, whole.allocated ? (100 * secs / whole.allocated).toFixed(1) + "%" : ""))))),
    el("h3", {}, "Fair share (sshare)"),
    el("table", { id: "shares" }, el("thead", {}, el("tr", {}, ["Account", "User", "RawShares", "NormShares", "RawUsage",
      "EffectvUsage", "FairShare"].map((h) => el("th", {}, h)))),
      el("tbody", {}, shares.shares.map((n) => el("tr", { "data-account": n.account, "data-user": n.user || "" },
        el("td", { class: "indent-" + Math.min(n.depth, 6) }, n.account), el("td", {}, n.user || ""), el("td", {}, n.raw_shares),
        el("td", {}, n.norm_shares.toFixed(6)), el("td", {}, Math.round(n.raw_usage)), el("td", {}, n.effective_usage.toFixed(6)),
        el("td", {}, n.fairshare === null ? "" : n.fairshare.toFixed(6)))))),
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

let rendering = 0, busy = false, drawn = null;
let afterMount = [];  // what a page does once its elements are in place (restore a scroll position)
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
  const section = { job: "queue", run: "runs" }[page] || page;
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("current", a.dataset.page === section);
  let content;
  afterMount = [];
  ticks = [];
  if (page === "queue") content = queuePage();
  else if (page === "job" && arg) content = await jobPage(arg);
  else if (page === "runs") content = runsPage();
  else if (page === "scheduler") content = await schedulerPage();
  else if (page === "accounting") content = await accountingPage();
  else if (page === "run" && arg) content = await runPage(arg);
  else if (page === "signin") content = signInPage();
  else content = clusterPage();
  if (n !== rendering) return;  // a newer render started meanwhile
  const focused = keepFocus && document.activeElement && document.activeElement.dataset.filter;
  const main = document.getElementById("main");
  main.replaceChildren(...content);
  main.dataset.page = page;
  drawn = `${page}/${arg}/${state.version}/${me}`;
  for (const f of afterMount) f();
  performance.mark("page-shown");  // (what bench/ measures)
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
      const got = await Promise.all([...PUBLIC_LISTS].map((p) => api("GET", p, undefined, true)));
      performance.mark("lists-read");  // (what bench/ measures)
      state.look = got[0].look;
      const texts = got.map((g) => g.text).join("\u0000");
      if (texts === state.texts) return;  // nothing new to draw
      state.texts = texts;
      state.jobs = got[0].doc.jobs || [];
      state.nodes = got[1].doc.nodes || [];
      state.partitions = got[2].doc.partitions || [];
      state.version = (state.version || 0) + 1;
      await render(true);
    } catch (e) {
      message("cannot reach the controller: " + e.message, true);
    } finally {
      refreshing = null;
    }
  })();
  return refreshing;
}

// (the stream is read in a worker, events.js: the page's own requests all end, so it goes idle)
function follow() {
  const live = document.getElementById("live");
  const events = new Worker("/ui/events.js");
  events.onmessage = ({ data: m }) => {
    if (m.kind === "open") { live.textContent = "● live"; live.className = "on"; return; }
    if (m.kind === "error") { live.textContent = "○ reconnecting"; live.className = ""; return; }
    let said = null;
    try { said = JSON.parse(m.data).look; } catch (err) { /* an older controller: look again */ }
    if (said && said === state.look) return;  // the lists were read after it: nothing new
    refresh();
  };
}

window.addEventListener("hashchange", () => render());
// a failure in a page's drawing is said where tests and people look, not lost with its promise
window.addEventListener("unhandledrejection", (e) => console.error("dashboard:", e.reason));
// the pages drawn from the lists alone: between changes a tick only updates their running times
const FROM_LISTS = new Set(["cluster", "queue", "runs"]);

function tick() {
  const { page, arg } = route();
  if (FROM_LISTS.has(page) && drawn === `${page}/${arg}/${state.version}/${signedInUser()}`) {
    for (const [cell, j] of ticks) cell.textContent = duration(elapsed(j));
    document.getElementById("updated").textContent = "updated " + new Date().toLocaleTimeString();
    return;
  }
  render(true);
}

window.addEventListener("DOMContentLoaded", async () => {
  performance.mark("script-start");
  takeTokenFromAddress();
  api("GET", "/api/v1/ping").then((cfg) => {  // (beside the first look at the lists, not before it)
    if (cfg && cfg.cluster) document.getElementById("cluster-name").textContent = cfg.cluster;
  }).catch(() => { /* the first refresh says so */ });
  refresh();
  follow();
  // running times tick (not while a list is open or a sign-in is typed)
  setInterval(() => {
    const focus = document.activeElement;
    // (not while a render waits on the controller: a slow answer is not thrown away every second)
    if (!busy && route().page !== "signin" && !(focus && focus.tagName === "SELECT")) tick();
  }, 1000);
});
