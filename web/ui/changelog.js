// The session's change log, from the state document: records grouped per
// call, newest first, each row with a before/after diff.

import { h, fill, cell } from "./dom.js";

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

function keyText(key) {
  return Object.entries(key || {}).map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`).join(", ");
}

function diffTable(r) {
  const before = r.before || {};
  const after = r.after || {};
  const keyCols = Object.keys(r.key || {});
  const cols = [...new Set([...keyCols, ...Object.keys(before).sort(), ...Object.keys(after).sort()])];
  const head = ["column", r.before ? "before" : null, r.after ? "after" : null].filter(Boolean);
  return h("table", { class: "diff" },
    h("thead", {}, h("tr", {}, head.map((c) => h("th", {}, c)))),
    h("tbody", {}, cols.map((c) => {
      const changed = r.op !== "update" || !same(before[c], after[c]);
      return h("tr", { class: changed ? r.op : "same" },
        h("td", { class: "col" }, c),
        r.before ? h("td", { class: "before" }, cell(before[c])) : null,
        r.after ? h("td", { class: "after" }, cell(after[c])) : null);
    })));
}

// record draws one change record; its table is named as SQL and task
// patterns name it, node.table.
export function record(r) {
  const where = `${r.world}.${r.table}`;
  return h("div", { class: `change ${r.op}`, dataset: { where, op: r.op, seq: r.seq } },
    h("div", { class: "change-head" },
      h("span", { class: `op ${r.op}` }, r.op),
      h("code", { class: "where" }, where),
      h("span", { class: "key", title: "primary key" }, keyText(r.key)),
      h("span", { class: "by muted" }, r.internal ? `by ${r.tool} (internal)` : `by ${r.tool}`)),
    diffTable(r));
}

// truncation says why the oldest records of a state document's log are
// missing, from its change_log_truncated; null when the log is whole.
export function truncation(t) {
  if (!t || !t.dropped) return null;
  const why = [
    t.max_bytes ? `the server keeps at most ${t.max_bytes} bytes of a session's log (max-changelog-bytes)` : null,
    t.reply_bytes ? `a state reply holds at most ${t.reply_bytes} bytes (max-reply-bytes)` : null,
  ].filter(Boolean).join("; ");
  return `The ${t.dropped} oldest change record${t.dropped === 1 ? " was" : "s were"} dropped${why ? `: ${why}` : ""}. The log starts at seq ${t.dropped + 1}.`;
}

// renderChangeLog draws records into el. callTools maps a call number to
// the tool the page called, when known; truncated is the state document's
// change_log_truncated, said above the records when present.
export function renderChangeLog(el, records, callTools, truncated) {
  const note = truncation(truncated);
  const head = note ? h("p", { class: "warn small truncated" }, note) : null;
  if (!records.length) {
    fill(el, head, h("p", { class: "muted" }, note ? "No change records kept." : "No changes yet."));
    return;
  }
  const calls = new Map();
  for (const r of records) {
    if (!calls.has(r.call)) calls.set(r.call, []);
    calls.get(r.call).push(r);
  }
  const groups = [...calls.entries()].sort((a, b) => b[0] - a[0]).map(([call, rs]) => {
    const top = callTools.get(call) || (rs.find((r) => !r.internal) || rs[0]).tool;
    return h("section", { class: "call", dataset: { call } },
      h("h3", {}, `Call ${call}`, h("span", { class: "muted" }, ` · ${top} · ${rs.length} row${rs.length === 1 ? "" : "s"}`)),
      rs.map(record));
  });
  fill(el, head, groups);
}
