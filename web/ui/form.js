// A form generated from a tool's input JSON Schema. Scalars get inputs,
// enums a select, nested objects a fieldset; anything else (arrays, maps,
// unions) is typed as JSON. Empty optional fields are left out of the
// arguments. The page checks the schema's bounds itself (the form is
// novalidate): a field that breaks one says so under it, as it is edited
// and when a call reads it, where the browser's own tooltip would vanish.
// The reset form checks its own fields the same way, with checkField and
// numberReader.

import { h, isNumber, parseJSON, showError } from "./dom.js";

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
// the field when one is invalid. Called with strict true, as a call reads
// them, it also checks each field against its schema's bounds and shows
// what is wrong under every field that breaks one. onInput is called on
// every edit.
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
      readers.push((strict) => {
        const v = readObj(strict);
        return Object.keys(v).length || req ? [name, v] : null;
      });
      continue;
    }
    const [input, readValue] = control(prop, path, req);
    const error = h("span", { class: "error", hidden: true });
    const read = (strict) => {
      const v = readValue(strict);
      if (v === undefined && req) throw new Error(`${path} is required`);
      return v;
    };
    const check = checkField(input, error, read);
    input.addEventListener("input", onInput);
    input.addEventListener("change", onInput);
    parent.append(h("label", { class: "field" }, label, input, error, help));
    readers.push((strict) => {
      const v = strict ? check() : read(false);
      return v === undefined ? null : [name, v];
    });
  }
  // Strictly, every field is read, so that each invalid one says so; the
  // first error is thrown.
  return (strict) => {
    const out = {};
    let first = null;
    for (const r of readers) {
      try {
        const kv = r(strict);
        if (kv) out[kv[0]] = kv[1];
      } catch (err) {
        if (!strict) throw err;
        first = first || err;
      }
    }
    if (first) throw first;
    return out;
  };
}

// checkField checks input as it is edited, showing what is wrong with it in
// error (hidden while it is right) and marking it aria-invalid. It returns
// the field's check, which reads it strictly with read, shows the outcome
// the same way, and returns the value or throws the Error shown.
export function checkField(input, error, read) {
  const check = () => {
    try {
      const v = read(true);
      showError(error, null);
      input.removeAttribute("aria-invalid");
      return v;
    } catch (err) {
      showError(error, err);
      input.setAttribute("aria-invalid", "true");
      throw err;
    }
  };
  input.addEventListener("input", () => {
    try {
      check();
    } catch {
      // Shown under the field.
    }
  });
  return check;
}

// describeType says what a property takes: its type, format and bounds,
// each bound as exact gives it, so one past 2^53 shows as the schema wrote
// it.
function describeType(s) {
  const t = baseType(s);
  const [min, max, maxLength] = [s.minimum, s.maximum, s.maxLength].map(exact);
  const bits = [];
  if (s.format) bits.push(s.format);
  if (min !== undefined) bits.push(`≥ ${min}`);
  if (max !== undefined) bits.push(`≤ ${max}`);
  if (maxLength !== undefined) bits.push(`≤ ${maxLength} chars`);
  return bits.length ? `${t}, ${bits.join(", ")}` : t;
}

// exact returns the number v (a Number, a BigInt, or a JSON number
// parseJSON keeps as its text) as one that compares exactly: an integer
// as a BigInt, which < and > compare with a Number by their values, where
// two Numbers may be rounded alike (2^63 and 2^63-1 are one Number).
// Anything else is undefined.
function exact(v) {
  if (typeof v === "number" || typeof v === "bigint") return v;
  if (!isNumber(v)) return undefined;
  const text = JSON.stringify(v);
  return /^-?\d+$/.test(text) ? BigInt(text) : Number(text);
}

// bound returns what is wrong with the number n (as exact returns it)
// against the schema s's bounds, or "" when it is within them; whose names
// whose bounds they are.
function bound(s, path, n, whose) {
  const [min, max, xmin, xmax] = [s.minimum, s.maximum, s.exclusiveMinimum, s.exclusiveMaximum].map(exact);
  if (min !== undefined && n < min) return `${path} must be ≥ ${min}, ${whose} minimum`;
  if (max !== undefined && n > max) return `${path} must be ≤ ${max}, ${whose} maximum`;
  if (xmin !== undefined && n <= xmin) return `${path} must be > ${xmin}, ${whose} exclusive minimum`;
  if (xmax !== undefined && n >= xmax) return `${path} must be < ${xmax}, ${whose} exclusive maximum`;
  return "";
}

// numberReader returns the reader of el, an input of type number for the
// integer or number schema s, named path: its value, or undefined when it
// is empty; text it cannot parse is refused, and, read strictly, so is a
// value outside the bounds of s, which whose says whose they are. An
// integer typed is checked as typed, exactly, against bounds that may be
// BigInts.
export function numberReader(el, s, path, whose = "its schema's") {
  const t = baseType(s);
  const what = t === "integer" ? "an integer" : "a number";
  return (strict) => {
    // Text the input cannot parse as a number (such as "1e") reads as
    // empty: it is refused, not left out.
    if (el.validity.badInput) throw new Error(`${path} must be ${what}`);
    const text = el.value.trim();
    if (text === "") return undefined;
    const n = Number(text);
    if (!Number.isFinite(n) || (t === "integer" && !Number.isInteger(n))) throw new Error(`${path} must be ${what}`);
    const digits = /^-?(0|[1-9]\d*)$/.test(text);
    const wrong = strict ? bound(s, path, digits ? BigInt(text) : n, whose) : "";
    if (wrong) throw new Error(wrong);
    // An integer past 2^53 is sent with the digits typed, as parseJSON
    // keeps one, not rounded to the nearest Number.
    return !Number.isSafeInteger(n) && digits ? parseJSON(text) : n;
  };
}

// control returns an input for one property and a reader that gives its
// value, or undefined when it is empty; read strictly, a value outside the
// schema's bounds throws an Error saying which.
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
      const el = h("input", { type: "number", name: path, step: t === "integer" ? "1" : "any", min: exact(s.minimum), max: exact(s.maximum), placeholder });
      return [el, numberReader(el, s, path)];
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
      const [minLength, maxLength] = [s.minLength, s.maxLength].map(exact);
      const el = h("input", { type: "text", name: path, maxlength: maxLength, placeholder: placeholder || (s.format === "date-time" ? "2026-06-01T09:00:00Z" : "") });
      // An empty optional string is left out; an empty required one is sent.
      return [el, (strict) => {
        if (el.value === "" && !req) return undefined;
        const n = [...el.value].length; // JSON Schema counts code points
        if (strict && minLength !== undefined && n < minLength) throw new Error(`${path} must be at least ${minLength} characters, its schema's minLength`);
        if (strict && maxLength !== undefined && n > maxLength) throw new Error(`${path} must be at most ${maxLength} characters, its schema's maxLength`);
        return el.value;
      }];
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
