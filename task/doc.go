// Package task turns a world into a reinforcement-learning environment:
// tasks to sample, a reward for each episode, and recorded trajectories that
// can be graded again without an agent.
//
// A task (env.Task) is an instruction, the instance it starts from, an
// optional tool allow list and a grader made of checks. Worlds declare
// tasks in Go with (*env.World).AddTask or in a tasks.yaml beside their
// fixtures; ForWorld returns both.
//
// # Grading
//
// Grade runs every check on the instance's read-only inspection view and its
// change log, never on the stores the agent writes. The reward is the
// weighted fraction of checks passed, in [0, 1]; the episode is done when
// every check passed or a Go check says so.
//
//	SQL check        a query returning one value, equal to Equals or truthy
//	only_changed     nothing outside these tables changed (no collateral damage)
//	must_change      each of these tables changed
//	unchanged        none of these tables changed
//	Go function      any logic over the view and the log
//
// # Episodes
//
// Open opens an instance for a task and returns an Episode, which refuses
// calls outside the task's allow list, grades on demand and may record its
// calls with a Recorder: one JSONL file per episode, a header line, one line
// per call, and an end line with the final grading and state hash.
// ReplayTrajectory makes the calls of such a file again from the same
// fixture and seed, grades, and reports every difference from the
// recording; ReplayResumed does the same for a restored episode's file,
// from the checkpoint it continues.
//
// See docs/tasks.md for the tasks.yaml format and the trajectory format.
//
// # Concurrency
//
// Parse, ForWorld, Grade, ReplayTrajectory and ReplayResumed are safe for
// concurrent use. Episode, Recorder and Recording are safe for concurrent use.
package task
