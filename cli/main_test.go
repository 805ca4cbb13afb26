package cli

import (
	"fmt"
	"os"
	"testing"
)

// TestMain gives the servers the tests start (and the processes they
// start) a checkpoint store of the run's own, through SEAHAVEN_CHECKPOINTS,
// instead of the shared default under the temp directory: a drain writes
// checkpoints even when a test never asks for one.
func TestMain(m *testing.M) {
	if os.Getenv("SEAHAVEN_CHECKPOINTS") != "" {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "seahaven-cli-test-checkpoints-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("SEAHAVEN_CHECKPOINTS", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
