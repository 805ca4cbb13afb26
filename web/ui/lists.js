// The fixtures (GET /fixtures) and live sessions (GET /sessions) panels.

import { h, fill, ago } from "./dom.js";

// parentChain returns the ids from a fixture's parent up to its root, and
// whether the chain ends at a parent the list does not hold.
export function parentChain(byID, f) {
  const chain = [];
  const seen = new Set([f.id]);
  let p = f.parent_id;
  while (p) {
    if (seen.has(p)) return { chain, broken: `cycle at ${p}` };
    seen.add(p);
    chain.push(p);
    const next = byID.get(p);
    if (!next) return { chain, broken: `${p} is not served` };
    p = next.parent_id;
  }
  return { chain, broken: null };
}

// renderFixtures draws the fixture list; use(id) resets from a fixture.
export function renderFixtures(el, fixtures, use) {
  if (!fixtures.length) {
    fill(el, h("p", { class: "muted" }, "The server has no fixtures: resets start from genesis."));
    return;
  }
  const byID = new Map(fixtures.map((f) => [f.id, f]));
  fill(el, fixtures.map((f) => {
    const { chain, broken } = parentChain(byID, f);
    const hashes = Object.entries(f.file_sha256 || {}).sort((a, b) => (a[0] === "main" ? -1 : b[0] === "main" ? 1 : a[0].localeCompare(b[0])));
    return h("div", { class: "fixture", dataset: { fixture: f.id } },
      h("div", { class: "node-head" },
        h("span", { class: "path" }, f.id),
        h("span", { class: "world-name" }, `world ${f.world_version}`),
        h("span", { class: "muted small" }, `created ${f.created_at}`),
        h("button", { type: "button", class: "small right", onclick: () => use(f.id) }, "Reset from this fixture")),
      f.description ? h("p", {}, f.description) : null,
      h("dl", { class: "facts" },
        h("dt", {}, "parents"),
        h("dd", { class: "chain" }, chain.length ? chain.flatMap((id, i) => [i ? " ← " : "", h("code", {}, id)]) : h("span", { class: "muted" }, "none (a root fixture)"),
          broken ? h("span", { class: "warn" }, ` (${broken})`) : null),
        hashes.length ? [h("dt", {}, "files"), h("dd", {}, h("table", { class: "hashes" }, hashes.map(([path, sum]) =>
          h("tr", { dataset: { node: path } }, h("td", {}, h("code", {}, path)), h("td", {}, h("code", { class: "hash" }, sum))))))] : null));
  }));
}

// renderSessions draws the session table; mine is this page's session's
// ref, and watch(ref) opens the Watch tab on a session.
export function renderSessions(table, sessions, mine, watch) {
  const now = Date.now();
  const rows = [...sessions].sort((a, b) => Date.parse(a.created) - Date.parse(b.created));
  fill(table,
    h("thead", {}, h("tr", {}, ["ref", "transport", "age", "idle", "steps", "episode", ""].map((c) => h("th", {}, c)))),
    h("tbody", {}, rows.length ? rows.map((s) => h("tr", { class: mine && s.ref === mine ? "mine" : null, dataset: { ref: s.ref, episode: s.episode_id || "", steps: s.step_count } },
      h("td", {}, h("code", {}, s.ref)),
      h("td", {}, s.transport),
      h("td", { title: s.created }, ago(s.created, now)),
      h("td", { title: s.last_activity }, ago(s.last_activity, now)),
      h("td", { class: "num" }, s.step_count),
      h("td", {}, s.episode_id ? h("code", {}, s.episode_id) : h("span", { class: "muted" }, "no reset yet"),
        mine && s.ref === mine ? h("span", { class: "tag" }, "this page") : null),
      h("td", {}, h("button", { type: "button", class: "small watch", onclick: () => watch(s.ref) }, "Watch"))))
      : h("tr", {}, h("td", { colspan: 7, class: "muted" }, "No live sessions."))));
}
