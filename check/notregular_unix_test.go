//go:build unix

package check_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/seahaven/seahaven/check"
	"github.com/seahaven/seahaven/fixture"
	"github.com/seahaven/seahaven/internal/testfs"
	"github.com/seahaven/seahaven/task"
)

// TestWorld_FixturesNotRegular: a sidecar or tasks file that is a named
// pipe is a finding, not a check that waits on it forever.
func TestWorld_FixturesNotRegular(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "acme"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(dir, "acme", fixture.SidecarName), filepath.Join(dir, task.FileName)} {
		if err := unix.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out string
	testfs.Within(t, "check.World", func() {
		out = check.Format(check.World(context.Background(), buildCompany(shape{paymentsSchema: chargesSchema}, dir)))
	})
	for _, want := range []string{
		"SH401 error: fixture acme: the sidecar cannot be read: acme/" + fixture.SidecarName + " is not a regular file",
		"SH407 error: the tasks file cannot be read: " + task.FileName + " is not a regular file",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("findings lack %q:\n%s", want, out)
		}
	}
}
