// The inspector and playground. It talks to the server only through the
// public protocol: one WebSocket to /ws for the playground session, and the
// JSON GET endpoints /metadata, /composition, /fixtures, /tasks, /sessions
// and /sessions/{ref}/watch.

import { $, h, fill, showError, pretty, cell, isNumber, getJSON, parseJSON } from "./dom.js";
import { Session } from "./session.js";
import { buildForm, checkField, numberReader } from "./form.js";
import { renderTree, renderEdges } from "./tree.js";
import { renderChangeLog } from "./changelog.js";
import { renderFixtures, renderSessions } from "./lists.js";
import { renderGrading, renderTimeline } from "./timeline.js";

const SESSIONS_EVERY_MS = 3000;
const WATCH_EVERY_MS = 1000;
// MAX_SEED is the largest seed a reset takes, 2^63-1 (an int64).
const MAX_SEED = 2n ** 63n - 1n;

const ui = {
  session: null,
  tools: [],
  tool: null, // the selected tool
  readArgs: null, // reads the form's arguments
  argsEdited: false, // the JSON arguments were edited by hand
  episode: null, // the episode id of the last state document
  callTools: new Map(), // engine call number -> tool the page called
  seenCalls: new Set(),
  fixtures: [],
  tasks: [],
  checkpoint: null, // the checkpoint a drain closed this page's session with (1012), until restored or reconnected
  watchRef: null, // the session the Watch tab shows
  ownRef: null, // this page's session, once known: its ref lasts as long as the socket
  others: new Set(), // sessions of other clients that had the episode id this page reset with, before it did
  sessions: [], // the latest GET /sessions
};

// ---- tabs -------------------------------------------------------------

function showTab() {
  const want = location.hash.slice(1) || "playground";
  const tab = document.querySelector(`#tabs a[data-tab="${CSS.escape(want)}"]`) ? want : "playground";
  for (const a of document.querySelectorAll("#tabs a")) {
    a.classList.toggle("active", a.dataset.tab === tab);
    // Said by screen readers, as the class is shown.
    if (a.dataset.tab === tab) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  for (const s of document.querySelectorAll("main > section")) s.hidden = s.id !== tab;
  if (tab === "sessions") refreshSessions();
  if (tab === "watch") refreshWatch();
}

// ---- banner and connection status --------------------------------------

function banner(err) {
  showError($("banner"), err);
}

function setStatus(state, text) {
  const el = $("ws-status");
  el.dataset.state = state;
  el.textContent = text;
  $("reconnect").hidden = state !== "closed";
  const restore = $("restore-checkpoint");
  restore.hidden = state !== "closed" || !ui.checkpoint;
  restore.title = ui.checkpoint ? `Restore checkpoint ${ui.checkpoint} into a new session` : "";
}

// drainedInto returns the checkpoint a close names: a server that drains
// closes each /ws session with 1012 (service restart) and the reason
// "checkpoint <id>", which a reset with {"checkpoint": "<id>"} restores.
function drainedInto(detail) {
  const prefix = "checkpoint ";
  return detail.code === 1012 && detail.reason.startsWith(prefix) ? detail.reason.slice(prefix.length) : null;
}

// ---- the playground session -------------------------------------------

// connect opens the playground session and resets it from the form, or,
// given a checkpoint, restores that into it.
async function connect(checkpoint) {
  const url = `${location.protocol === "https:" ? "wss:" : "ws:"}//${location.host}/ws`;
  const s = new Session(url);
  ui.session = s;
  ui.ownRef = null;
  ui.others = new Set();
  ui.checkpoint = null;
  setStatus("connecting", "connecting…");
  s.addEventListener("notice", (ev) => banner(ev.detail));
  s.addEventListener("close", (ev) => {
    if (ui.session !== s) return;
    ui.checkpoint = drainedInto(ev.detail);
    setStatus("closed", "disconnected");
    banner(ui.checkpoint
      ? `${ev.detail.message}. Its server drained: Restore checkpoint continues the episode in a new session (a reset with {"checkpoint": "${ui.checkpoint}"}); Reconnect starts a new one.`
      : ev.detail.message + ". Reconnect to start a new session.");
  });
  try {
    await s.connect();
  } catch (err) {
    if (checkpoint) ui.checkpoint = checkpoint; // still to restore
    setStatus("closed", "disconnected");
    banner(err);
    return;
  }
  setStatus("open", "connected");
  banner(null);
  // The new session has no episode until its reset: what the page showed
  // was the ended session's.
  clearEpisode();
  await reset(checkpoint);
  refreshSessions();
}

// readStartup reads the reset form's startup keywords: a JSON object, or
// undefined when empty.
function readStartup() {
  const text = $("reset-startup").value.trim();
  if (!text) return undefined;
  let v;
  try {
    v = parseJSON(text);
  } catch (err) {
    throw new Error(`Startup keywords are not valid JSON: ${err.message}`);
  }
  if (v === null || typeof v !== "object" || Array.isArray(v)) throw new Error("Startup keywords must be a JSON object");
  return v;
}

// resetChecks are the checks of the reset form's fields that the page
// checks itself (the form is novalidate), as a tool's fields are
// (form.js): each says under itself what is wrong, as it is edited and
// when a reset reads it.
const resetChecks = {
  seed: checkField($("reset-seed"), $("reset-seed-error"),
    numberReader($("reset-seed"), { type: "integer", minimum: 0, maximum: MAX_SEED }, "seed", "its")),
  startup: checkField($("reset-startup"), $("reset-startup-error"), readStartup),
};

// syncCheckpoint disables the reset form's other fields while its
// Checkpoint names one: a restore continues the checkpointed episode as it
// was, and the server refuses any of them given with it.
function syncCheckpoint() {
  const restoring = $("reset-checkpoint").value.trim() !== "";
  $("reset-new").disabled = restoring;
  $("reset-checkpoint-note").hidden = !restoring;
}

// resetOptions reads the reset form: a checkpoint to restore, or the
// options of a new episode. Every checked field is read, so that each
// wrong one says so; the first error is thrown.
function resetOptions() {
  const checkpoint = $("reset-checkpoint").value.trim();
  if (checkpoint) return { checkpoint };
  const opts = {};
  let first = null;
  const checked = {};
  for (const [k, check] of Object.entries(resetChecks)) {
    try {
      checked[k] = check();
    } catch (err) {
      first = first || err;
    }
  }
  if (first) throw first;
  const task = $("reset-task").value;
  if (task) opts.task = task;
  const fixture = $("reset-fixture").value;
  if (fixture === "__genesis") opts.fixture = "";
  else if (fixture !== "__default") opts.fixture = fixture;
  if (checked.seed !== undefined) opts.seed = checked.seed;
  const now = $("reset-now").value.trim();
  if (now) opts.now = now;
  const clock = $("reset-clock").value;
  if (clock) opts.clock_mode = clock;
  const episode = $("reset-episode").value.trim();
  if (episode) opts.episode_id = episode;
  if (checked.startup !== undefined) opts.startup = checked.startup;
  if ($("reset-control").checked) opts.control_tools = true;
  return opts;
}

// reset resets the playground session with the form's options, or, given
// a checkpoint, restores it; a restore of that checkpoint refused leaves
// it in the form's Checkpoint field, where Reset tries it again or
// another id replaces it.
async function reset(checkpoint) {
  const btn = $("reset-btn");
  showError($("reset-error"), null);
  btn.disabled = true;
  let restoring = checkpoint;
  try {
    if (!ui.session) throw new Error("the session is not connected yet");
    const opts = checkpoint ? { checkpoint } : resetOptions();
    restoring = opts.checkpoint;
    if (!ui.ownRef && opts.episode_id) {
      // Episode ids are the clients' own: another client's session may
      // have this one already, and is not this page's.
      const list = await getJSON("/sessions");
      ui.others = new Set(list.filter((x) => x.transport === "ws" && x.episode_id === opts.episode_id).map((x) => x.ref));
    }
    await ui.session.reset(opts);
    clearEpisode();
    await Promise.all([loadTools(), refreshState(), loadTables()]);
    await refreshTimeline();
  } catch (err) {
    if (checkpoint) {
      $("reset-checkpoint").value = checkpoint;
      syncCheckpoint();
    }
    showError($("reset-error"), restoring ? `Restoring checkpoint ${restoring}: ${err.message}` : err);
  } finally {
    btn.disabled = false;
  }
}

// clearEpisode empties the playground of the episode it showed: its facts,
// tools, the last call's outcome, grading, timeline, change log and
// tables. The selected tool is kept, to be selected again among the next
// episode's tools.
function clearEpisode() {
  ui.episode = null;
  ui.tools = [];
  ui.callTools.clear();
  ui.seenCalls.clear();
  clear("episode", "tools", "tools-count", "grading", "timeline", "timeline-count", "changelog", "changes-count", "table-list");
  $("tool-empty").hidden = false;
  $("tool-detail").hidden = true;
  $("call-result").hidden = true;
  showError($("call-error"), null);
}

async function loadTools() {
  showError($("tools-error"), null);
  try {
    const obs = await ui.session.step({ type: "list_tools" });
    ui.tools = obs.tools || [];
  } catch (err) {
    showError($("tools-error"), err);
    return;
  }
  $("tools-count").textContent = ui.tools.length;
  fill($("tools"), ui.tools.map((t) => h("li", {},
    h("button", { type: "button", class: "tool", dataset: { tool: t.name }, onclick: () => selectTool(t.name) },
      h("span", { class: "tool-name" }, t.name),
      h("span", { class: "tool-desc" }, t.description)))));
  const keep = ui.tool && ui.tools.find((t) => t.name === ui.tool.name);
  selectTool(keep ? keep.name : null);
}

function selectTool(name) {
  ui.tool = ui.tools.find((t) => t.name === name) || null;
  for (const b of document.querySelectorAll("#tools button")) b.classList.toggle("active", b.dataset.tool === name);
  $("tool-empty").hidden = !!ui.tool;
  $("tool-detail").hidden = !ui.tool;
  if (!ui.tool) return;
  $("tool-name").textContent = ui.tool.name;
  $("tool-desc").textContent = ui.tool.description;
  $("tool-schema").textContent = pretty(ui.tool.input_schema);
  ui.argsEdited = false;
  ui.readArgs = buildForm($("tool-fields"), ui.tool.input_schema, syncArgs);
  syncArgs();
  showError($("call-error"), null);
  $("call-result").hidden = true;
}

// syncArgs rewrites the JSON arguments from the form.
function syncArgs() {
  ui.argsEdited = false;
  try {
    $("tool-args").value = pretty(ui.readArgs());
  } catch {
    // The form is incomplete; the call reports it.
  }
}

function callArguments() {
  if (!ui.argsEdited) return ui.readArgs(true);
  let v;
  try {
    v = parseJSON($("tool-args").value);
  } catch (err) {
    throw new Error(`The arguments are not valid JSON: ${err.message}`);
  }
  if (v === null || typeof v !== "object" || Array.isArray(v)) throw new Error("The arguments must be a JSON object");
  return v;
}

async function callTool() {
  if (!ui.tool) return;
  const name = ui.tool.name;
  const btn = $("call-btn");
  showError($("call-error"), null);
  $("call-result").hidden = true;
  btn.disabled = true;
  try {
    const obs = await ui.session.step({ type: "call_tool", tool_name: name, arguments: callArguments() });
    if (obs.error) {
      showError($("call-error"), `${obs.error.error_type}: ${obs.error.message}`);
    } else {
      $("call-output").textContent = pretty(obs.result ? obs.result.data : null);
      $("call-result").hidden = false;
    }
    await refreshState(name);
    await refreshTimeline();
  } catch (err) {
    showError($("call-error"), err);
  } finally {
    btn.disabled = false;
  }
}

// refreshState reads the state document; tool names the call just made, so
// its new change records are labelled with it.
async function refreshState(tool) {
  showError($("changes-error"), null);
  let doc;
  try {
    doc = await ui.session.state();
  } catch (err) {
    showError($("changes-error"), err);
    return;
  }
  ui.episode = doc.episode_id;
  const log = doc.change_log || [];
  for (const r of log) {
    if (!ui.seenCalls.has(r.call)) {
      ui.seenCalls.add(r.call);
      if (tool) ui.callTools.set(r.call, tool);
    }
  }
  const dropped = doc.change_log_truncated ? doc.change_log_truncated.dropped : 0;
  $("changes-count").textContent = log.length || dropped
    ? `${log.length} row${log.length === 1 ? "" : "s"}${dropped ? `, ${dropped} older dropped` : ""}` : "";
  renderChangeLog($("changelog"), log, ui.callTools, doc.change_log_truncated);
  renderEpisode(doc);
}

// fact is one term and its value in a facts list.
const fact = (k, v) => [h("dt", {}, k), h("dd", {}, v)];

function renderEpisode(doc) {
  const el = $("episode");
  el.dataset.steps = doc.step_count;
  el.dataset.fixture = doc.fixture ? doc.fixture.id : "";
  el.dataset.episode = doc.episode_id || "";
  el.dataset.now = doc.now;
  fill(el,
    fact("episode", h("code", {}, doc.episode_id || "—")),
    fact("fixture", doc.fixture ? h("code", {}, doc.fixture.id) : h("span", { class: "muted" }, "genesis")),
    fact("steps", String(doc.step_count)),
    fact("now", h("code", {}, doc.now)),
    fact("clock", doc.clock_mode),
    fact("seed", cell(doc.seed))); // past 2^53, as parseJSON keeps it
}

// ownRef finds this page's session among the live ones: by its episode id
// the first time, leaving out the sessions of other clients that had that
// id before this page reset with it, and by the ref found since.
async function ownRef() {
  const list = await getJSON("/sessions");
  ui.sessions = list;
  if (ui.ownRef && list.some((s) => s.ref === ui.ownRef)) return ui.ownRef;
  const mine = list.filter((s) => s.transport === "ws" && ui.episode && s.episode_id === ui.episode && !ui.others.has(s.ref));
  ui.ownRef = mine.length === 1 ? mine[0].ref : null;
  return ui.ownRef;
}

// refreshTimeline draws this page's episode: its grading and the timeline
// of its tool calls, read from the server as the Watch tab reads any.
async function refreshTimeline() {
  showError($("timeline-error"), null);
  try {
    const ref = await ownRef();
    if (!ref) throw new Error("this page's session is not among the live ones");
    const w = await getJSON(`/sessions/${encodeURIComponent(ref)}/watch`);
    renderGrading($("grading"), w.steps, w.state);
    renderTimeline($("timeline"), w.steps, w.state);
    $("timeline-count").textContent = w.steps.length ? `${w.steps.length} step${w.steps.length === 1 ? "" : "s"}` : "";
  } catch (err) {
    showError($("timeline-error"), err);
  }
}

// ---- Watch ---------------------------------------------------------------

function watch(ref) {
  if (ref !== ui.watchRef) clearWatch();
  ui.watchRef = ref;
  if (location.hash === "#watch") refreshWatch();
  else location.hash = "#watch";
}

// clear empties the elements with the given ids, their data attributes
// too, of the session they showed, so that an ended one's do not stay,
// looking live: the Watch tab's once its session ended, the playground's
// once a new session replaced the page's.
function clear(...ids) {
  for (const id of ids) {
    const el = $(id);
    for (const k of Object.keys(el.dataset)) delete el.dataset[k];
    el.replaceChildren();
  }
}

// clearWatch empties the Watch tab of the session it showed, so that an
// ended one's facts, grading and timeline do not stay below the message
// that it ended, looking live.
function clearWatch() {
  clear("watch-facts", "watch-grading", "watch-timeline", "watch-count", "watch-updated");
}

// redrawTimeline draws steps into el as renderTimeline does, keeping what
// the reader opened: the sections open before stay open, and while text
// inside el is selected the redraw waits (the next poll brings it), so
// that a poll every second neither closes what is being read nor drops a
// selection being copied.
function redrawTimeline(el, steps, state) {
  const sel = window.getSelection();
  if (sel && !sel.isCollapsed && el.contains(sel.anchorNode)) return;
  const key = (d) => `${d.closest("section.step")?.dataset.step}/${d.querySelector("summary")?.textContent}`;
  const open = new Set([...el.querySelectorAll("section.step details[open]")].map(key));
  renderTimeline(el, steps, state);
  for (const d of el.querySelectorAll("section.step details")) {
    if (open.has(key(d))) d.open = true;
  }
}

// refreshWatch draws the watched session, read-only; the Watch tab polls it
// while it is shown.
async function refreshWatch() {
  const ref = ui.watchRef;
  $("watch-empty").hidden = !!ref;
  $("watch-ref").textContent = ref || "—";
  if (!ref) return;
  let w;
  try {
    w = await getJSON(`/sessions/${encodeURIComponent(ref)}/watch`);
  } catch (err) {
    if (err.status === 404 && ui.watchRef === ref) {
      // The session ended: stop polling it, and say so until another is picked.
      ui.watchRef = null;
      clearWatch();
      showError($("watch-error"), `${err.message} (the session has ended; pick a live one under Sessions)`);
      return;
    }
    showError($("watch-error"), `${err.message || err} (the session may have ended)`);
    return;
  }
  if (ui.watchRef !== ref) return;
  showError($("watch-error"), null);
  const s = w.session;
  const el = $("watch-facts");
  el.dataset.ref = s.ref;
  el.dataset.steps = s.step_count;
  fill(el,
    fact("transport", s.transport),
    fact("episode", s.episode_id ? h("code", {}, s.episode_id) : h("span", { class: "muted" }, "no reset yet")),
    fact("task", w.state.task ? h("code", {}, w.state.task) : h("span", { class: "muted" }, "none")),
    fact("fixture", w.state.fixture ? h("code", {}, w.state.fixture.id) : h("span", { class: "muted" }, "genesis")),
    fact("steps", String(s.step_count)),
    fact("now", h("code", {}, w.state.now)));
  renderGrading($("watch-grading"), w.steps, w.state);
  redrawTimeline($("watch-timeline"), w.steps, w.state);
  // The server keeps a session's newest steps: say when older ones are gone.
  const first = w.steps.length ? w.steps[0].step : 1;
  $("watch-count").textContent = !w.steps.length ? ""
    : `${w.steps.length} step${w.steps.length === 1 ? "" : "s"}` + (first > 1 ? ` (the newest: steps before ${first} are not kept)` : "");
  $("watch-updated").textContent = `updated ${new Date().toLocaleTimeString()}`;
}

// ---- SQL console --------------------------------------------------------

async function loadTables() {
  showError($("tables-error"), null);
  try {
    const res = await ui.session.inspect(
      "SELECT schema, name FROM pragma_table_list WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND schema <> 'temp' ORDER BY schema = 'main' DESC, schema, name");
    fill($("table-list"), res.rows.map(([schema, name]) => {
      const q = schema === "main" ? name : `${schema}.${name}`;
      return h("li", {}, h("button", { type: "button", class: "link", onclick: () => runSQL(`SELECT * FROM ${q} LIMIT 100`) }, q));
    }));
  } catch (err) {
    showError($("tables-error"), err);
  }
}

async function runSQL(text) {
  if (text !== undefined) $("sql").value = text;
  const sql = $("sql").value.trim();
  const out = $("sql-result");
  showError($("sql-error"), null);
  $("sql-meta").textContent = "";
  out.replaceChildren();
  if (!sql) return;
  const btn = $("sql-run");
  btn.disabled = true;
  try {
    if (!ui.session) throw new Error("the session is not connected yet");
    const raw = $("sql-params").value.trim();
    let params = [];
    if (raw) {
      try {
        params = parseJSON(raw);
      } catch (err) {
        throw new Error(`Parameters are not valid JSON: ${err.message}`);
      }
      if (!Array.isArray(params)) throw new Error("Parameters must be a JSON array");
    }
    const started = performance.now();
    const res = await ui.session.inspect(sql, params);
    const ms = Math.round(performance.now() - started);
    $("sql-meta").textContent = `${res.rows.length} row${res.rows.length === 1 ? "" : "s"}${res.truncated ? ` (truncated: ${res.truncated_reason || "a server limit"})` : ""} · ${ms} ms`;
    fill(out, h("table", { class: "grid" },
      h("thead", {}, h("tr", {}, res.columns.map((c) => h("th", {}, c)))),
      h("tbody", {}, res.rows.map((r) => h("tr", {}, r.map((v) => h("td", { class: isNumber(v) ? "num" : null }, cell(v))))))));
  } catch (err) {
    showError($("sql-error"), err);
  } finally {
    btn.disabled = false;
  }
}

// ---- GET endpoints --------------------------------------------------------

async function loadMetadata() {
  try {
    const m = await getJSON("/metadata");
    const el = $("world");
    fill(el, h("strong", {}, m.name), " ", h("span", { class: "muted" }, m.version));
    el.title = m.description || "";
    document.title = `${m.name} · Seahaven inspector`;
  } catch (err) {
    banner(err);
  }
}

async function loadComposition() {
  showError($("composition-error"), null);
  try {
    const comp = await getJSON("/composition");
    $("composition-count").textContent = `${comp.nodes.length} node${comp.nodes.length === 1 ? "" : "s"}, ${comp.edges.length} edge${comp.edges.length === 1 ? "" : "s"}`;
    renderTree($("tree"), comp);
    renderEdges($("edges"), comp);
  } catch (err) {
    showError($("composition-error"), err);
  }
}

async function loadFixtures() {
  showError($("fixtures-error"), null);
  try {
    ui.fixtures = await getJSON("/fixtures");
  } catch (err) {
    showError($("fixtures-error"), err);
    showError($("reset-error"), err);
    return;
  }
  $("fixtures-count").textContent = ui.fixtures.length;
  const sel = $("reset-fixture");
  const keep = sel.value;
  fill(sel, h("option", { value: "__default" }, "server default"),
    ui.fixtures.map((f) => h("option", { value: f.id, title: f.description }, f.id)),
    h("option", { value: "__genesis" }, "genesis (empty stores)"));
  sel.value = [...sel.options].some((o) => o.value === keep) ? keep : "__default";
  renderFixtures($("fixture-list"), ui.fixtures, (id) => {
    $("reset-fixture").value = id;
    location.hash = "#playground";
    reset();
  });
}

async function loadTasks() {
  try {
    ui.tasks = await getJSON("/tasks");
  } catch (err) {
    showError($("reset-error"), err);
    return;
  }
  const sel = $("reset-task");
  fill(sel, h("option", { value: "" }, "none (no grading)"),
    ui.tasks.map((t) => h("option", { value: t.id, title: t.instruction }, t.difficulty ? `${t.id} (${t.difficulty})` : t.id)));
  showInstruction();
}

function showInstruction() {
  const t = ui.tasks.find((x) => x.id === $("reset-task").value);
  const el = $("task-instruction");
  el.hidden = !t;
  el.textContent = t ? `${t.instruction}${t.fixture ? ` (from ${t.fixture})` : ""}` : "";
}

async function refreshSessions() {
  try {
    const list = await getJSON("/sessions");
    ui.sessions = list;
    showError($("sessions-error"), null);
    $("sessions-pill").textContent = `sessions: ${list.length}`;
    $("sessions-count").textContent = list.length;
    $("sessions-updated").textContent = `updated ${new Date().toLocaleTimeString()}`;
    renderSessions($("session-table"), list, ui.ownRef, watch);
  } catch (err) {
    showError($("sessions-error"), err);
    $("sessions-pill").textContent = "sessions: ?";
  }
}

// ---- wiring ------------------------------------------------------------

function wire() {
  window.addEventListener("hashchange", showTab);
  $("reset-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    reset();
  });
  $("tool-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    callTool();
  });
  $("tool-args").addEventListener("input", () => {
    ui.argsEdited = true;
  });
  $("state-refresh").addEventListener("click", () => ui.session && refreshState());
  $("sql-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    runSQL();
  });
  $("sql").addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) {
      ev.preventDefault();
      runSQL();
    }
  });
  $("reconnect").addEventListener("click", () => connect());
  $("restore-checkpoint").addEventListener("click", () => connect(ui.checkpoint));
  // Shown only by a server with a token (web.HandlerWithAuth): ending the
  // browser's session cookie turns the page back into the sign-in form.
  $("sign-out").addEventListener("click", async () => {
    if (ui.session) ui.session.close();
    try {
      await fetch("logout", { method: "POST" });
    } finally {
      location.reload();
    }
  });
  $("reset-task").addEventListener("change", showInstruction);
  $("reset-checkpoint").addEventListener("input", syncCheckpoint);
  syncCheckpoint();
  window.addEventListener("pagehide", () => ui.session && ui.session.close());
}

wire();
showTab();
loadMetadata();
loadComposition();
loadTasks();
loadFixtures().then(connect);
refreshSessions();
setInterval(refreshSessions, SESSIONS_EVERY_MS);
setInterval(() => location.hash === "#watch" && refreshWatch(), WATCH_EVERY_MS);
