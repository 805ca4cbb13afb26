// A form generated from a tool's input JSON Schema. Scalars get inputs,
// enums a select, nested objects a fieldset; anything else (arrays, maps,
// unions) is typed as JSON. Empty optional fields are left out of the
// arguments.

import { h, parseJSON } from "./dom.js";

// baseType returns a schema's JSON type, ignoring "null" in a type list.
function baseType(s) {
  const t = s.type;
  if (Array.isArray(t)) return t.find((x) => x !== "null") || "null";
  if (t) return t;
  if (s.properties) return "object";
  return "any";
}

// buildForm renders the fields of an object schema into container and
// returns a function that reads the arguments, throwing an Error that names
// the field when one is invalid. onInput is called on every edit.
export function buildForm(container, schema, onInput) {
  container.replaceChildren();
  const read = objectFields(container, schema || {}, "", onInput);
  if (!container.childElementCount) container.append(h("p", { class: "muted small" }, "This tool takes no arguments."));
  return read;
}

function objectFields(parent, schema, prefix, onInput) {
  const props = schema.properties || {};
  const required = new Set(schema.required || []);
  const readers = [];
  for (const [name, prop] of Object.entries(props)) {
    const path = prefix ? `${prefix}.${name}` : name;
    const req = required.has(name);
    const label = h("span", { class: "name" }, name, req ? h("span", { class: "req", title: "required" }, " *") : null,
      h("span", { class: "type" }, " ", describeType(prop)));
    const help = prop.description ? h("span", { class: "help" }, prop.description) : null;
    if (baseType(prop) === "object" && prop.properties) {
      const fs = h("fieldset", { class: "nested" }, h("legend", {}, label), help);
      parent.append(fs);
      const readObj = objectFields(fs, prop, path, onInput);
      readers.push(() => {
        const v = readObj();
        return Object.keys(v).length || req ? [name, v] : null;
      });
      continue;
    }
    const [input, readValue] = control(prop, path, req);
    input.addEventListener("input", onInput);
    input.addEventListener("change", onInput);
    parent.append(h("label", { class: "field" }, label, input, help));
    readers.push(() => {
      const v = readValue();
      if (v === undefined) {
        if (req) throw new Error(`${path} is required`);
        return null;
      }
      return [name, v];
    });
  }
  return () => {
    const out = {};
    for (const r of readers) {
      const kv = r();
      if (kv) out[kv[0]] = kv[1];
    }
    return out;
  };
}

function describeType(s) {
  const t = baseType(s);
  const bits = [];
  if (s.format) bits.push(s.format);
  if (s.minimum !== undefined) bits.push(`≥ ${s.minimum}`);
  if (s.maximum !== undefined) bits.push(`≤ ${s.maximum}`);
  if (s.maxLength !== undefined) bits.push(`≤ ${s.maxLength} chars`);
  return bits.length ? `${t}, ${bits.join(", ")}` : t;
}

// control returns an input for one property and a reader that gives its
// value, or undefined when it is empty.
function control(s, path, req) {
  const t = baseType(s);
  const placeholder = s.default !== undefined ? `default: ${JSON.stringify(s.default)}` : "";
  if (Array.isArray(s.enum)) {
    const sel = h("select", { name: path },
      req ? null : h("option", { value: "" }, placeholder || "—"),
      s.enum.map((v, i) => h("option", { value: String(i) }, typeof v === "string" ? v : JSON.stringify(v))));
    return [sel, () => (sel.value === "" ? undefined : s.enum[Number(sel.value)])];
  }
  switch (t) {
    case "integer":
    case "number": {
      const el = h("input", { type: "number", name: path, step: t === "integer" ? "1" : "any", min: s.minimum, max: s.maximum, placeholder });
      return [el, () => {
        const text = el.value.trim();
        if (text === "") return undefined;
        const n = Number(text);
        if (!Number.isFinite(n) || (t === "integer" && !Number.isInteger(n))) throw new Error(`${path} must be ${t === "integer" ? "an integer" : "a number"}`);
        // An integer past 2^53 is sent with the digits typed, as parseJSON
        // keeps one, not rounded to the nearest Number.
        return !Number.isSafeInteger(n) && /^-?(0|[1-9]\d*)$/.test(text) ? parseJSON(text) : n;
      }];
    }
    case "boolean": {
      if (req) {
        const el = h("input", { type: "checkbox", name: path });
        return [el, () => el.checked];
      }
      const sel = h("select", { name: path }, h("option", { value: "" }, placeholder || "—"), h("option", {}, "true"), h("option", {}, "false"));
      return [sel, () => (sel.value === "" ? undefined : sel.value === "true")];
    }
    case "string": {
      const el = h("input", { type: "text", name: path, maxlength: s.maxLength, placeholder: placeholder || (s.format === "date-time" ? "2026-06-01T09:00:00Z" : "") });
      // An empty optional string is left out; an empty required one is sent.
      return [el, () => (el.value === "" && !req ? undefined : el.value)];
    }
    default: {
      const el = h("textarea", { name: path, rows: 3, spellcheck: "false", placeholder: placeholder || "JSON" });
      return [el, () => {
        if (el.value.trim() === "") return undefined;
        try {
          return parseJSON(el.value);
        } catch (err) {
          throw new Error(`${path} is not valid JSON: ${err.message}`);
        }
      }];
    }
  }
}
