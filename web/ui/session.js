// The playground session: one WebSocket to /ws. The server answers every
// message with exactly one frame, in order (close gets none), so replies are
// matched to requests by a FIFO queue.

import { parseJSON } from "./dom.js";

// ProtocolError is an error frame: {message, code, ...}.
export class ProtocolError extends Error {
  constructor(data) {
    super(data && data.message ? data.message : "the server sent an error frame without a message");
    this.code = data && data.code;
    this.data = data;
  }
}

export class Session extends EventTarget {
  constructor(url) {
    super();
    this.url = url;
    this.ws = null;
    this.pending = [];
  }

  get open() {
    return this.ws !== null && this.ws.readyState === WebSocket.OPEN;
  }

  // connect opens the socket; it resolves once open. Events: "close"
  // ({detail: {code, reason}}) and "notice" ({detail: Error}) for a frame no
  // request waits for, such as CAPACITY_REACHED right after accept.
  connect() {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(this.url);
      this.ws = ws;
      let opened = false;
      ws.onopen = () => {
        opened = true;
        resolve();
      };
      ws.onmessage = (ev) => this.receive(ev.data);
      ws.onclose = (ev) => {
        const why = `the session's WebSocket closed (code ${ev.code}${ev.reason ? ": " + ev.reason : ""})`;
        for (const p of this.pending.splice(0)) p.reject(new Error(why));
        if (!opened) reject(new Error(`cannot connect to ${this.url}: ${why}`));
        this.dispatchEvent(new CustomEvent("close", { detail: { code: ev.code, reason: ev.reason, message: why } }));
      };
    });
  }

  receive(text) {
    let frame;
    try {
      frame = parseJSON(text);
    } catch {
      this.notice(new Error("the server sent a frame that is not JSON"));
      return;
    }
    const p = this.pending.shift();
    if (!p) {
      this.notice(frame.type === "error" ? new ProtocolError(frame.data) : new Error(`unexpected ${frame.type} frame`));
      return;
    }
    if (frame.type === "error") p.reject(new ProtocolError(frame.data));
    else if (frame.type !== p.expect) p.reject(new Error(`expected a ${p.expect} frame, got ${frame.type}`));
    else p.resolve(frame.data);
  }

  notice(err) {
    this.dispatchEvent(new CustomEvent("notice", { detail: err }));
  }

  request(type, data, expect) {
    if (!this.open) return Promise.reject(new Error("the session is not connected: reconnect first"));
    return new Promise((resolve, reject) => {
      this.pending.push({ resolve, reject, expect });
      this.ws.send(JSON.stringify(data === undefined ? { type } : { type, data }));
    });
  }

  reset(options) {
    return this.request("reset", options, "observation");
  }

  // step sends an action and returns the observation.
  async step(action) {
    const reply = await this.request("step", action, "observation");
    return reply.observation;
  }

  state() {
    return this.request("state", undefined, "state");
  }

  inspect(sql, params) {
    return this.request("inspect", params && params.length ? { sql, params } : { sql }, "inspect");
  }

  close() {
    if (this.open) this.ws.send(JSON.stringify({ type: "close" }));
  }
}
