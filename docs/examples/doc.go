// Package examples holds the code of Seahaven's guides (README.md and
// docs/*.md), compiled and run by its tests, and the tests that hold the
// guides to it.
//
// A fenced Go block in a guide must have a marker comment on the line right
// above it saying where the block lives, and must appear there verbatim,
// line for line (leading tabs aside, so a block may show at the margin
// code that sits indented in a function body):
//
//	<!-- example: Example_authoringSurface -->  a function of this package
//	<!-- example: crm/Example -->               a function of a package below it
//	<!-- example: crm/crm.go -->                a file below this directory
//
// Other blocks may be tied to generated or recorded text:
//
//	<!-- output: Example_fixturesRefusals -->   the block is that Example's // Output:
//	<!-- golden: ws_session.jsonl -->           the block's "→ frame" and "← frame" lines are
//	                                            a run of openenv/testdata/golden/ws_session.jsonl
//
// and the state document's tables in docs/eval.md are generated from
// schemas/state.json by `go run ./docs/gen`. The tests fail on a Go block
// without a marker and on any block that drifted from what it names.
//
// The packages below this one are examples too: crm is the world
// docs/authoring.md builds (with its tests, its fixture generator and
// cmd/crm, a main that serves it), and firstworld is the README's program.
package examples
