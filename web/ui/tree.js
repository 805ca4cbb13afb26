// The composition tree from GET /composition: nodes keyed by canonical
// path, and the AddWorld edges {from, name, to, prefix, allow, block, store}.
// A node reached by several edges (an alias) is drawn once, under its
// canonical route; other routes point at it.

import { h, fill, short } from "./dom.js";

const routeOf = (e) => (e.from === "main" ? e.name : `${e.from}/${e.name}`);

function list(names) {
  return names.map((n) => h("code", {}, n)).flatMap((c, i) => (i ? [", ", c] : [c]));
}

function edgeLabel(e) {
  return h("div", { class: "edge", dataset: { edge: routeOf(e) } },
    h("span", { class: "verb" }, "AddWorld"), " ", h("code", {}, e.name),
    e.prefix ? h("span", { class: "tag" }, "prefix ", h("code", {}, e.prefix)) : null,
    e.allow ? h("span", { class: "tag allow" }, "allow ", e.allow.length ? list(e.allow) : "none") : null,
    e.block ? h("span", { class: "tag block" }, "block ", e.block.length ? list(e.block) : "none") : null,
    e.store !== null && e.store !== undefined ? h("span", { class: "tag store" }, "store ", h("code", {}, e.store)) : null);
}

function nodeCard(n) {
  return h("div", { class: "node", dataset: { path: n.path } },
    h("div", { class: "node-head" },
      h("span", { class: "path" }, n.path),
      h("span", { class: "world-name" }, `${n.world} ${n.world_version}`),
      h("span", { class: n.scope === null ? "tag muted" : "tag store" }, n.scope === null ? "default scope" : `scope ${n.scope}`)),
    h("dl", { class: "facts" },
      n.aliases && n.aliases.length ? [h("dt", {}, "aliases"), h("dd", {}, list(n.aliases))] : null,
      h("dt", {}, "schema"), h("dd", {}, short(n.schema_hash, 16)),
      h("dt", {}, "file"), h("dd", {}, h("code", {}, n.file))));
}

// renderTree draws the composition into el.
export function renderTree(el, comp) {
  const nodes = new Map(comp.nodes.map((n) => [n.path, n]));
  const edgesFrom = new Map();
  for (const e of comp.edges) {
    if (!edgesFrom.has(e.from)) edgesFrom.set(e.from, []);
    edgesFrom.get(e.from).push(e);
  }
  const drawn = new Set();
  const branch = (path) => {
    const n = nodes.get(path);
    drawn.add(path);
    const kids = (edgesFrom.get(path) || []).map((e) => {
      const target = nodes.get(e.to);
      if (target && e.to === routeOf(e) && !drawn.has(e.to)) {
        return h("li", {}, edgeLabel(e), branch(e.to));
      }
      return h("li", {}, edgeLabel(e),
        h("div", { class: "node ref", dataset: { ref: e.to } }, "→ ", h("span", { class: "path" }, e.to),
          h("span", { class: "muted" }, " the same node, drawn at its canonical path")));
    });
    return [nodeCard(n), kids.length ? h("ul", {}, kids) : null];
  };
  if (!nodes.has("main")) {
    fill(el, h("p", { class: "muted" }, "The composition has no root node."));
    return;
  }
  fill(el, h("ul", { class: "root" }, h("li", {}, branch("main"))));
}

// renderEdges lists the edges as a table.
export function renderEdges(table, comp) {
  const opt = (v) => (v === null || v === undefined ? h("span", { class: "muted" }, "—") : Array.isArray(v) ? (v.length ? list(v) : "none") : h("code", {}, v));
  fill(table,
    h("thead", {}, h("tr", {}, ["from", "name", "to", "prefix", "allow", "block", "store"].map((c) => h("th", {}, c)))),
    h("tbody", {}, comp.edges.map((e) => h("tr", {},
      h("td", {}, h("code", {}, e.from)), h("td", {}, h("code", {}, e.name)), h("td", {}, h("code", {}, e.to)),
      h("td", {}, e.prefix ? h("code", {}, e.prefix) : h("span", { class: "muted" }, "—")),
      h("td", {}, opt(e.allow)), h("td", {}, opt(e.block)), h("td", {}, opt(e.store))))));
}
