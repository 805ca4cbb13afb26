// Small DOM and fetch helpers shared by the panels.

// h builds an element: h("td", {class: "x", title: "y"}, "text", child).
// Attributes whose value is null, undefined or false are left out; "on*"
// attributes given functions become event listeners.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : String(c));
  }
}

// $ finds an element by id.
export const $ = (id) => document.getElementById(id);

// fill replaces an element's children.
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// showError shows err (an Error, a string, or null to hide) in a box.
export function showError(box, err) {
  if (!err) {
    box.hidden = true;
    box.textContent = "";
    return;
  }
  box.textContent = err instanceof Error ? err.message : String(err);
  box.hidden = false;
}

// parseJSON is JSON.parse that keeps integers past 2^53 and numbers past
// the float range exact: each is held as the text it was written with
// (JSON.rawJSON), which JSON.stringify writes back unchanged and cell and
// pretty show, where a Number would round 9007199254740993 to
// 9007199254740992, and turn 1e999 (how the server writes an infinity, and
// binds it) into Infinity, which JSON.stringify sends as null. Browsers
// without source text access parse as JSON.parse does.
export function parseJSON(text) {
  if (typeof JSON.rawJSON !== "function") return JSON.parse(text);
  return JSON.parse(text, (_, v, ctx) =>
    typeof v === "number" && ctx && (!Number.isFinite(v) || (!Number.isSafeInteger(v) && /^-?\d+$/.test(ctx.source))) ? JSON.rawJSON(ctx.source) : v);
}

// isNumber reports whether v is a JSON number: a Number, or one parseJSON
// keeps as its text.
export const isNumber = (v) => typeof v === "number" || (typeof JSON.isRawJSON === "function" && JSON.isRawJSON(v));

// pretty formats a value as indented JSON.
export const pretty = (v) => JSON.stringify(v, null, 2);

// maxCell is how many characters of a value a table cell shows.
export const maxCell = 10000;

// cell formats one SQL or JSON value for a table cell: past maxCell
// characters, cut, saying how long it is.
export function cell(v) {
  if (v === null || v === undefined) return h("span", { class: "null" }, "NULL");
  if (isNumber(v) && typeof v === "object") {
    // An integer as its digits; an infinity as a Number shows it.
    const text = JSON.stringify(v);
    return /^-?\d+$/.test(text) ? text : String(Number(text));
  }
  const text = typeof v === "object" ? JSON.stringify(v) : String(v);
  if (text.length <= maxCell) return text;
  // Not between the two halves of a surrogate pair.
  const end = /[\uD800-\uDBFF]/.test(text[maxCell - 1]) ? maxCell - 1 : maxCell;
  return h("span", {}, text.slice(0, end),
    h("span", { class: "muted small cut" }, ` … (${text.length.toLocaleString("en")} characters in all; the rest is not shown: select substr() of it to read on)`));
}

// short abbreviates a hash, keeping the full text in a title.
export function short(hash, n = 12) {
  if (!hash) return h("span", { class: "muted" }, "—");
  return h("code", { class: "hash", title: hash }, hash.length > n ? hash.slice(0, n) + "…" : hash);
}

// getJSON fetches a JSON document; a failure throws an Error naming the
// request and the server's reason.
export async function getJSON(path) {
  let res;
  try {
    res = await fetch(path, { headers: { Accept: "application/json" } });
  } catch (err) {
    throw new Error(`GET ${path}: ${err.message}`);
  }
  const text = await res.text();
  let body;
  try {
    body = text ? parseJSON(text) : null;
  } catch {
    throw new Error(`GET ${path}: ${res.status} ${res.statusText}: the reply is not JSON`);
  }
  if (res.status === 401 && location.pathname.endsWith("/web/")) {
    // Signed out (the server's token changed, or the cookie was cleared):
    // the page itself is the sign-in form again.
    location.reload();
  }
  if (!res.ok) {
    const detail = body && body.detail !== undefined ? (typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail)) : res.statusText;
    const err = new Error(`GET ${path}: ${res.status} ${detail}`);
    err.status = res.status;
    throw err;
  }
  return body;
}

// ago says how long ago an RFC 3339 instant was, relative to now (ms).
export function ago(iso, now = Date.now()) {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return "?";
  let s = Math.max(0, Math.round((now - t) / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  s %= 60;
  if (m < 60) return `${m}m ${s}s`;
  return `${Math.floor(m / 60)}h ${m % 60}m`;
}
