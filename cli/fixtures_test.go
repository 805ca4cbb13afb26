package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/compositiontest"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/examples/worlds/chat"
	"github.com/seahaven/seahaven/examples/worlds/company"
)

// copyAcme copies the company world's acme fixture into a new fixtures
// directory and returns that directory.
func copyAcme(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "fixtures")
	acme := filepath.Join(dir, company.AcmeID)
	if err := os.MkdirAll(acme, 0o755); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(compositiontest.FixturesDir(t, company.World), company.AcmeID)
	for name := range hashDir(t, src) {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(acme, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// interruptAcme leaves in dir what a replace of acme killed between its two
// renames leaves (package fixture's TestRecover_KilledBetweenRenames makes
// that state with a real SIGKILL): acme aside under an ".old-" name, its
// unfinished replacement under a ".tmp-" name.
func interruptAcme(t *testing.T, dir string) {
	t.Helper()
	if err := os.Rename(filepath.Join(dir, company.AcmeID), filepath.Join(dir, ".old-acme-0123456789abcdef")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, ".tmp-acme-42"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// wantRecovered fails unless dir holds acme and nothing hidden, and the log
// says acme was restored.
func wantRecovered(t *testing.T, dir, log string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if strings.Join(got, " ") != company.AcmeID {
		t.Errorf("fixtures directory holds %q, want only acme", got)
	}
	if !strings.Contains(log, `msg="fixture: restored a fixture whose replacement was interrupted"`) &&
		!strings.Contains(log, `"msg":"fixture: restored a fixture whose replacement was interrupted"`) {
		t.Errorf("the repair is not logged; stderr:\n%s", log)
	}
}

// runFixtures runs `seahaven fixtures args...` through Main.
func runFixtures(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	m := exampleMain()
	m.Stdout, m.Stderr = &out, &errOut
	err = m.Run(context.Background(), append([]string{"fixtures"}, args...))
	return out.String(), errOut.String(), err
}

func TestFixturesCommand_Recovers(t *testing.T) {
	for _, sub := range []string{"list", "verify", "build"} {
		t.Run(sub, func(t *testing.T) {
			dir := copyAcme(t)
			interruptAcme(t, dir)
			stdout, stderr, err := runFixtures(t, sub, "--world", "company", "--dir", dir)
			if err != nil {
				t.Fatalf("fixtures %s: %v\n%s", sub, err, stderr)
			}
			if sub != "build" && !strings.Contains(stdout, "\nacme ") {
				t.Errorf("fixtures %s does not show acme:\n%s", sub, stdout)
			}
			wantRecovered(t, dir, stderr)
		})
	}
}

func TestFixturesCommand_VerifyMissing(t *testing.T) {
	dir := copyAcme(t)
	if err := os.RemoveAll(filepath.Join(dir, company.AcmeID)); err != nil {
		t.Fatal(err)
	}
	stdout, _, err := runFixtures(t, "verify", "--world", "company", "--dir", dir)
	if code := exitCode(err); code != 1 {
		t.Fatalf("fixtures verify without acme: exit code %d (%v), want 1", code, err)
	}
	if !strings.Contains(err.Error(), "fixture acme is missing from "+dir+" (named by the world's default fixture, task ") {
		t.Errorf("error %q does not name the missing fixture and who names it", err)
	}
	if !strings.Contains(stdout, "\nacme ") || !strings.Contains(stdout, "MISSING") {
		t.Errorf("no MISSING row for acme:\n%s", stdout)
	}
}

// TestFixturesCommand_VerifyNamedOtherWorld: the world's default fixture
// (and its tasks') whose sidecar is of another world, which serve refuses
// to start from, fails verify, where it passed on its hashes alone.
func TestFixturesCommand_VerifyNamedOtherWorld(t *testing.T) {
	dir := copyAcme(t)
	editAcmeSidecar(t, dir, func(b []byte) []byte { return bytes.Replace(b, []byte("world: company"), []byte("world: zork"), 1) })
	_, _, err := runFixtures(t, "verify", "--world", "company", "--dir", dir)
	if code := exitCode(err); code != 1 || !strings.Contains(fmt.Sprint(err), "fixture acme is of world zork, not company, which names it (the world's default fixture, task ") {
		t.Errorf("fixtures verify with acme of world zork: exit code %d (%v), want 1 saying company names a fixture of another world", code, err)
	}
}

// TestFixturesCommand_ListEscapesControls: a description holding a
// carriage return, an escape sequence or a right-to-left override is
// listed with them escaped, where a carriage return let it write over the
// row's status on a terminal.
func TestFixturesCommand_ListEscapesControls(t *testing.T) {
	dir := copyAcme(t)
	editAcmeSidecar(t, dir, func(b []byte) []byte {
		return regexp.MustCompile(`(?m)^description: .*$`).ReplaceAll(b, []byte(`description: "\racme ok \e[K\u202eevil"`))
	})
	stdout, _, err := runFixtures(t, "list", "--world", "company", "--dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout, `\u000Dacme ok \u001B[K\u202Eevil`) || strings.ContainsAny(stdout, "\r\x1b\u202e") {
		t.Errorf("the listed description:\n%q\nwant its controls escaped", stdout)
	}
}

// TestFixturesCommand_NoSuchDir: list and verify of a --dir that is not
// there, or not a directory, fail naming it, rather than list nothing.
func TestFixturesCommand_NoSuchDir(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "fixtrues")
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"list", "verify"} {
		for dir, want := range map[string]string{
			missing: "fixtures " + sub + ": stat " + missing + ": no such file or directory",
			file:    "fixtures " + sub + ": " + file + " is not a directory",
		} {
			stdout, _, err := runFixtures(t, sub, "--world", "company", "--dir", dir)
			if code := exitCode(err); code != 1 || err.Error() != want {
				t.Errorf("fixtures %s --dir %s: exit code %d (%v), want 1 and %q", sub, dir, code, err, want)
			}
			if stdout != "" {
				t.Errorf("fixtures %s --dir %s printed %q", sub, dir, stdout)
			}
		}
	}
}

// TestFixturesCommand_VerifyMissingEmbedded: a fixture missing from a
// world's embedded fixtures is named as missing from them, not from the
// copy on disk instances are made from.
func TestFixturesCommand_VerifyMissingEmbedded(t *testing.T) {
	w := env.NewWorld(env.WorldSpec{Name: "stock", Version: "1.0.0", Schema: `CREATE TABLE items (id TEXT PRIMARY KEY) STRICT;`,
		Fixtures: fstest.MapFS{"tasks.yaml": {Data: []byte("tasks:\n  - id: t\n    instruction: x\n    fixture: nosuch\n    checks:\n      - sql: SELECT 1\n")}}})
	var out bytes.Buffer
	m := New(w)
	m.Stdout, m.Stderr = &out, io.Discard
	err := m.Run(context.Background(), []string{"fixtures", "verify"})
	want := "fixture nosuch is missing from the fixtures embedded in world stock (named by task t)"
	if exitCode(err) != 1 || err.Error() != want {
		t.Errorf("fixtures verify: %v, want exit code 1 and %q\n%s", err, want, &out)
	}
}

// TestFixturesCommand_Broken: a fixture whose sidecar does not parse is a
// FAILED row of list and verify, which go on to the other fixtures and exit
// 1 naming it.
func TestFixturesCommand_Broken(t *testing.T) {
	for _, sub := range []string{"list", "verify"} {
		t.Run(sub, func(t *testing.T) {
			dir := copyAcme(t)
			for _, id := range []string{"aaa", "zzz"} {
				if err := os.Mkdir(filepath.Join(dir, id), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, id, "fixture.yaml"), []byte("colour: red\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			stdout, _, err := runFixtures(t, sub, "--world", "company", "--dir", dir)
			if code := exitCode(err); code != 1 {
				t.Fatalf("fixtures %s: exit code %d (%v), want 1\n%s", sub, code, err, stdout)
			}
			for _, id := range []string{"aaa", "zzz"} {
				if !strings.Contains(err.Error(), `fixture "`+id+`": fixture.yaml: line 1: colour: unknown key`) {
					t.Errorf("error %q does not name fixture %s and its key", err, id)
				}
			}
			lines := strings.Split(strings.TrimSpace(stdout), "\n")
			if len(lines) != 4 || !strings.HasPrefix(lines[1], "aaa ") || !strings.Contains(lines[1], "FAILED") ||
				!strings.HasPrefix(lines[2], "acme ") || strings.Contains(lines[2], "FAILED") ||
				!strings.HasPrefix(lines[3], "zzz ") || !strings.Contains(lines[3], "FAILED") {
				t.Errorf("fixtures %s:\n%s\nwant FAILED rows for aaa and zzz around acme", sub, stdout)
			}
		})
	}
}

// TestFixturesCommand_VerifyOtherWorlds: in a directory several worlds
// share, verify checks a fixture of another world this binary serves
// against that world, and one of a world it does not serve by its hashes.
func TestFixturesCommand_VerifyOtherWorlds(t *testing.T) {
	dir := copyAcme(t)
	ctx := context.Background()
	if _, err := compositiontest.Open(t, chat.World, composition.Options{}).Freeze(ctx, "talk", "", composition.FreezeOptions{FixturesDir: dir}); err != nil {
		t.Fatal(err)
	}
	stock := env.NewWorld(env.WorldSpec{Name: "stock", Version: "1.0.0", Schema: `CREATE TABLE items (id TEXT PRIMARY KEY) STRICT;`})
	for _, id := range []string{"shelf", "tampered"} {
		if _, err := compositiontest.Open(t, stock, composition.Options{}).Freeze(ctx, id, "", composition.FreezeOptions{FixturesDir: dir}); err != nil {
			t.Fatal(err)
		}
	}
	stdout, _, err := runFixtures(t, "verify", "--world", "company", "--dir", dir)
	if err != nil {
		t.Fatalf("fixtures verify: %v\n%s", err, stdout)
	}
	for _, want := range []string{"\nacme  ", "\nshelf ", "\ntalk  "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("fixtures verify does not list %q:\n%s", want, stdout)
		}
	}
	for _, row := range strings.Split(stdout, "\n")[1:] {
		if row == "" {
			continue
		}
		status := "ok"
		if strings.Contains(row, "stock 1.0.0") {
			status = "hashes ok"
		}
		if !strings.Contains(row, "  "+status+"  ") {
			t.Errorf("row %q: want status %q", row, status)
		}
	}
	f, err := os.OpenFile(filepath.Join(dir, "tampered", "state.sqlite"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("tampered")
	f.Close()
	stdout, _, err = runFixtures(t, "verify", "--world", "company", "--dir", dir)
	want := "fixture tampered (of world stock, not served by this binary): fixture: hash mismatch: node \"main\" file state.sqlite: sidecar records "
	if exitCode(err) != 1 || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("fixtures verify of a tampered fixture: %v, want exit code 1 and %q...\n%s", err, want, stdout)
	}
}

func TestServeCommand_RecoversFixtures(t *testing.T) {
	dir := copyAcme(t)
	interruptAcme(t, dir)
	started := false
	stderr, err := serveBriefly(t, []string{"--fixtures", dir, "--log-level", "warn"}, func(string) { started = true })
	if err != nil || !started {
		t.Fatalf("serve over an interrupted publish: started %v, err %v\n%s", started, err, stderr)
	}
	wantRecovered(t, dir, stderr)
}

// editAcmeSidecar rewrites the sidecar of acme in the fixtures directory
// dir with edit.
func editAcmeSidecar(t *testing.T, dir string, edit func([]byte) []byte) {
	t.Helper()
	p := filepath.Join(dir, company.AcmeID, "fixture.yaml")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, edit(b), 0o644); err != nil {
		t.Fatal(err)
	}
}
