// An episode's grading and the timeline of its tool calls, as
// GET /sessions/{ref}/watch gives them: each step with its arguments, its
// result or error, the reward and done after it, and the change records it
// made. The playground draws its own session with it, the Watch tab another.

import { cell, h, fill, pretty } from "./dom.js";
import { record } from "./changelog.js";

// grading returns the episode's latest reward and done from its steps.
function grading(steps) {
  let reward = null;
  let done = false;
  for (const s of steps) {
    if (s.reward !== null && s.reward !== undefined) reward = s.reward;
    done = done || s.done;
  }
  return { reward, done };
}

// renderGrading draws reward, done and the per-check results of the state
// document's latest grading into el.
export function renderGrading(el, steps, state) {
  if (!state || !state.task) {
    el.dataset.task = "";
    fill(el, h("p", { class: "muted" }, "No task: steps are not graded. Pick a task at reset."));
    return;
  }
  const { reward, done } = grading(steps);
  el.dataset.task = state.task;
  el.dataset.reward = reward === null ? "" : String(reward);
  el.dataset.done = String(done);
  const checks = state.checks || [];
  fill(el,
    h("div", { class: "score" },
      h("span", { class: "reward" }, reward === null ? "—" : reward.toFixed(2)),
      h("span", { class: `tag ${done ? "allow" : "muted"}` }, done ? "done" : "not done"),
      h("span", { class: "muted small" }, `task ${state.task}`)),
    checks.length
      ? h("ul", { class: "checks" }, checks.map((c) => h("li", { class: c.passed ? "pass" : "fail", dataset: { check: c.name } },
        h("span", { class: "mark" }, c.passed ? "✓" : "✗"),
        h("span", { class: "name" }, c.name),
        h("span", { class: "muted small" }, ` ${c.score.toFixed(2)} × ${cell(c.weight)}`), // past 2^53, as parseJSON keeps it
        c.detail ? h("div", { class: "detail muted small" }, c.detail) : null)))
      : h("p", { class: "muted" }, "No grading to show: the first step grades the episode, and a grading that failed leaves none."));
}

// renderTimeline draws the steps, newest first, each with the change
// records of the state document's log it made.
export function renderTimeline(el, steps, state) {
  if (!steps.length) {
    fill(el, h("p", { class: "muted" }, "No tool calls in this episode yet."));
    return;
  }
  const log = (state && state.change_log) || [];
  const rows = (s) => (s.changes ? log.filter((r) => r.seq >= s.changes[0] && r.seq <= s.changes[1]) : []);
  fill(el, [...steps].reverse().map((s) => {
    const changed = rows(s);
    // Records the step made that the log no longer holds (change_log_truncated).
    const made = s.changes ? Math.max(0, s.changes[1] - s.changes[0] + 1) : changed.length;
    const gone = made - changed.length;
    return h("section", { class: `step ${s.error ? "failed" : "ok"}`, dataset: { step: s.step, tool: s.tool } },
      h("h3", {},
        `Step ${s.step} · `, h("code", {}, s.tool),
        s.reward !== null && s.reward !== undefined ? h("span", { class: "tag", title: "reward after the step" }, `reward ${s.reward.toFixed(2)}`) : null,
        s.done ? h("span", { class: "tag allow" }, "done") : null,
        h("span", { class: "muted small" }, ` · ${made} row${made === 1 ? "" : "s"} changed`),
        gone > 0 ? h("span", { class: "warn small dropped" }, ` (${gone === made ? "all" : gone} dropped from the change log)`) : null),
      h("details", {}, h("summary", {}, "arguments"), h("pre", { class: "json" }, pretty(s.arguments))),
      s.error
        ? h("div", { class: "error" }, `${s.error.error_type}: ${s.error.message}`)
        : h("details", {}, h("summary", {}, "result"), h("pre", { class: "json" }, pretty(s.result))),
      changed.map(record));
  }));
}
