package docgen

// Notes describe the state document's fields that schemas/state.json
// leaves without a description, keyed by "Table.field" (the document's own
// table is "State"). A description in the schema wins over a note;
// StateTables fails for a field with neither, and for a note naming a field
// the schema does not have, so the tables cannot fall behind the schema.
var Notes = map[string]string{
	"State.episode_id":    "The episode's id: the reset's `episode_id`, else a new UUID (`Options.EpisodeID` in process, else null).",
	"State.state_format":  "The format of this document.",
	"State.world":         "The root world's name.",
	"State.world_version": "The root world's version.",
	"State.seed":          "The instance seed. The root's id stream is the seed itself; every other node's, and every node's SQL `random()`, is salted with its path.",
	"State.clock_mode":    "How the one instance clock moves: `frozen` (only `seahaven_control` moves it), `step` (each agent call advances it one tick), `wall` (real time; not reproducible).",

	"CompositionRecord.path":                 "The node's canonical path: `main` for the root, the added name for a child of the root, `<parent path>/<name>` deeper.",
	"CompositionRecord.world":                "The name of the node's world.",
	"CompositionRecord.world_version":        "The installed version of the node's world.",
	"CompositionRecord.scope":                "The scope the node was added under with `env.Store`; null for the root's default scope.",
	"CompositionRecord.aliases":              "Every other route that reaches the node (`shop/payments`), in discovery order.",
	"CompositionRecord.frozen_world_version": "The version the fixture recorded, when it is not the installed one; else null.",

	"FixtureRef.id":             "The fixture's id, which is also its directory name.",
	"FixtureRef.format_version": "1 for a world that adds nothing, 2 for a composite.",
	"FixtureRef.file_sha256":    "The SHA-256 of each node's frozen file, keyed by node path.",

	"ChangeRecord.seq":      "Numbers the records of an instance from 1, in log order.",
	"ChangeRecord.call":     "Numbers the agent calls of an instance that ran a tool, from 1; a call's records share its number, and a call that changed nothing has none. A call refused before it ran (an unknown tool, arguments that do not validate) takes no number, though a server counts it in `step_count`.",
	"ChangeRecord.tool":     "The tool whose frame wrote the row, by its owning world's own (unprefixed) name.",
	"ChangeRecord.internal": "True when that frame was a nested call made by host code through a handle.",
	"ChangeRecord.table":    "The table's name in that node's store.",
	"ChangeRecord.op":       "The row's net change over the frame.",
	"ChangeRecord.key":      "The row's primary-key columns, or `{\"rowid\": n}` for a table without a declared primary key (`{\"_rowid_\": n}`, or `{\"oid\": n}`, when a column is named `rowid`).",
	"ChangeRecord.before":   "The row when the frame began; null for an insert.",
	"ChangeRecord.after":    "The row when the frame ended; null for a delete.",

	"CheckResult.name":   "The check's name.",
	"CheckResult.passed": "True when the check earned its whole weight.",
	"CheckResult.score":  "The fraction of the check earned, from 0 to 1.",
	"CheckResult.weight": "The check's weight in the task's reward.",
	"CheckResult.detail": "What was expected and what was found.",
}
