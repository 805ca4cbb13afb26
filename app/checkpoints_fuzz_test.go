package app

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/fixture"
	"github.com/seahaven/seahaven/openenv"
)

// checkpointFuzzFiles are the files of a checkpoint FuzzCheckpointFiles
// replaces, by the fuzzed input's index.
var checkpointFuzzFiles = []string{manifestName, episodeName, stateName}

// FuzzCheckpointFiles restores a checkpoint one of whose files, the
// manifest, episode.json or state.json, is arbitrary bytes; the manifest
// is given the hash of a changed episode.json or state.json, so that its
// content is read. A checkpoint store is shared by servers, and a file in
// it may be anything: the restore either succeeds, and the instance then
// takes a call and is graded, or is refused with an error that says why
// and names no server path; it never panics.
func FuzzCheckpointFiles(f *testing.F) {
	b := newTestBackend(f, Config{})
	info := checkpointed(f, b)
	dir := filepath.Join(b.checkpoints.dir, info.ID)
	pristine := map[string][]byte{}
	for _, name := range checkpointFuzzFiles {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			f.Fatal(err)
		}
		pristine[name] = data
		f.Add(uint8(len(pristine)-1), data)
	}
	for _, seed := range []struct {
		file uint8
		data string
	}{
		{0, `{}`}, {0, `{"format":1}`}, {0, `{"format":2,"id":"` + info.ID + `"}`}, {0, `[]`}, {0, ``},
		{0, `{"format":1,"id":"` + info.ID + `","expires_at":"not a time","world":"company"}`},
		{1, `{}`}, {1, `null`}, {1, `{"episode":{"task":"nope"}}`},
		{1, `{"episode":{"calls":-1,"last":{},"header":{"startup":{"a":[1,{"b":null}]},"clock_mode":"sideways"}},"session":7}`},
		{1, `{"episode":{"task":"","calls":9223372036854775807,"header":{"now":"yesterday","seed":-1}}}`},
		{2, `{}`}, {2, `null`}, {2, `{"clock":{}}`}, {2, `[1,2,3]`},
	} {
		f.Add(seed.file, []byte(seed.data))
	}
	ctx := context.Background()

	f.Fuzz(func(t *testing.T, file uint8, data []byte) {
		name := checkpointFuzzFiles[int(file)%len(checkpointFuzzFiles)]
		t.Cleanup(func() {
			for n, b := range pristine {
				if err := os.WriteFile(filepath.Join(dir, n), b, 0o600); err != nil {
					t.Fatal(err)
				}
			}
		})
		if name != manifestName {
			var m manifest
			if err := json.Unmarshal(pristine[manifestName], &m); err != nil {
				t.Fatal(err)
			}
			m.SHA256[name] = fixture.HashBytes(data)
			mb, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, manifestName), mb, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
		b.checkpoints.forget(info.ID) // read from disk, not from memory

		inst, _, err := b.Restore(ctx, info.ID)
		if err != nil {
			var oe *openenv.OptionError
			var ie *env.InfraError
			if !errors.As(err, &oe) && !errors.As(err, &ie) {
				t.Fatalf("%s %q: restore failed with %v (%T), want an *openenv.OptionError or an *env.InfraError", name, data, err, err)
			}
			if msg := err.Error(); strings.TrimSpace(msg) == "" || strings.Contains(msg, b.checkpoints.dir) {
				t.Fatalf("%s %q: refused with %q, want a message naming no server path", name, data, msg)
			}
			return
		}
		defer inst.Close()
		if _, err := inst.CallJSON(ctx, "list_staff", json.RawMessage(`{}`)); err != nil {
			var te *env.ToolError
			if !errors.As(err, &te) {
				t.Fatalf("%s %q: a call on the restored instance: %v", name, data, err)
			}
		}
		if g, ok := inst.(openenv.Grader); ok {
			g.Grade(ctx)
		}
	})
}
