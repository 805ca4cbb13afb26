//go:build unix

package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/seahaven/seahaven/internal/testfs"
)

// TestCheckpoints_NotRegular: a checkpoint file that is a named pipe or a
// link to a device is refused at once as corrupt, naming the file, by the
// server that wrote it and by another; retention and the latest and fence
// records do not wait on such files either, and a fence that is not a
// regular file is an error, which refuses its attempt's requests, rather
// than no fence.
func TestCheckpoints_NotRegular(t *testing.T) {
	dir := t.TempDir()
	b := newTestBackend(t, Config{Checkpoints: dir})
	other := newTestBackend(t, Config{Checkpoints: dir})
	for _, kind := range []struct {
		name string
		make func(t *testing.T, path string)
	}{
		{"named pipe", func(t *testing.T, p string) {
			if err := unix.Mkfifo(p, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"link to /dev/zero", func(t *testing.T, p string) {
			if err := os.Symlink("/dev/zero", p); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		for _, file := range []string{manifestName, "fixture.yaml", stateName, episodeName, "state.sqlite", "state.payments.sqlite"} {
			t.Run(kind.name+"/"+file, func(t *testing.T) {
				info := checkpointed(t, b)
				p := filepath.Join(dir, info.ID, file)
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
				kind.make(t, p)
				for _, server := range []struct {
					name string
					b    *Backend
				}{{"another server", other}, {"the server that wrote it", b}} {
					var msg string
					testfs.Within(t, "the restore", func() { msg = restoreErr(t, server.b, info.ID) })
					if !strings.Contains(msg, "is corrupt") || !strings.Contains(msg, file) || !strings.Contains(msg, "not a regular file") ||
						!strings.HasSuffix(msg, "nothing was restored") || strings.Contains(msg, dir) {
						t.Errorf("%s: got %q, want it corrupt, naming %s as not a regular file without the store's directory", server.name, msg, file)
					}
				}
				testfs.Within(t, "retention", func() { b.checkpoints.sweep(time.Now()) })
			})
		}
	}
	// The records beside the checkpoints.
	info := checkpointed(t, b)
	for _, p := range []string{
		b.checkpoints.pointerPath(latestDir, worldKey("company", "ep")),
		filepath.Join(dir, fencesDir, info.ID),
	} {
		os.Remove(p)
		if err := unix.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	testfs.Within(t, "Latest", func() {
		if _, ok := b.Latest("ep"); ok {
			t.Error("Latest names a checkpoint through a named pipe")
		}
	})
	testfs.Within(t, "FencedBy", func() {
		// Not read through, and not taken for no fence either: the
		// attempt's requests are refused.
		if _, ok, err := b.FencedBy(info.ID); ok || err == nil {
			t.Errorf("FencedBy of a fence that is a named pipe: fenced %v, error %v; want an error", ok, err)
		}
	})
}
