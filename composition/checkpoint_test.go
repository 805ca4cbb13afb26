package composition_test

import (
	"bytes"
	"context"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/compositiontest"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/examples/worlds/company"
	"github.com/seahaven/seahaven/fixture"
	"github.com/seahaven/seahaven/sqlitestore"
)

// dice draws from every stream an instance has: its ids, SQL random() and
// randomblob(), and its clock; a startup hook keeps a value in ctx.State.
var dice = diceWorld("1.0.0")

// diceWorld returns the dice world at version.
func diceWorld(version string) *env.World {
	w := env.NewWorld(env.WorldSpec{Name: "dice", Version: version, DefaultClockMode: env.ClockStep,
		Schema: `CREATE TABLE rolls (id TEXT PRIMARY KEY, n INTEGER NOT NULL, salt BLOB, at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP, label TEXT) STRICT;`})
	type rollArgs struct {
		Fail bool `json:"fail,omitempty"`
	}
	env.Tool(w, "roll", "Roll.", func(c *env.Ctx, in rollArgs) (env.Row, error) {
		id := c.IDs.UUID()
		if _, err := c.DB.Exec("INSERT INTO rolls (id, n, salt, label) VALUES (?, random(), randomblob(4), ?)", id, c.State["label"]); err != nil {
			return nil, err
		}
		if in.Fail {
			return nil, env.Errorf("rolled back on purpose")
		}
		rows, err := c.DB.Rows("SELECT id, n, hex(salt) AS salt, at, label FROM rolls WHERE id = ?", id)
		if err != nil {
			return nil, err
		}
		return rows[0], nil
	})
	env.OnStartup(w, func(c *env.Ctx, k struct {
		Label string `json:"label"`
	}) error {
		c.State["label"] = k.Label
		c.State["counts"] = map[string]any{"n": int64(3)}
		return nil
	})
	return w
}

// TestCheckpoint_UpgradedWorld: a checkpoint restores into the world at
// another version with the same schema, and the state document says the
// version installed now, as a reset would; a fixture's frozen version,
// when it differs from it, stays named.
func TestCheckpoint_UpgradedWorld(t *testing.T) {
	ctx := context.Background()
	inst := compositiontest.Open(t, dice, composition.Options{Startup: map[string]any{"label": "x"}})
	compositiontest.Call(t, inst, "roll", `{}`)
	fixtures := t.TempDir()
	if _, err := inst.Freeze(ctx, "table", "A roll.", composition.FreezeOptions{FixturesDir: fixtures}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		opts   composition.Options
		frozen *string
	}{
		{"Genesis", composition.Options{Startup: map[string]any{"label": "x"}}, nil},
		{"Fixture", composition.Options{Fixture: "table", FixturesDir: fixtures, Seed: 9, Startup: map[string]any{"label": "x"}}, new("1.0.0")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			old := compositiontest.Open(t, dice, tt.opts)
			compositiontest.Call(t, old, "roll", `{}`)
			if got := old.State().Composition["main"]; got.WorldVersion != "1.0.0" || got.FrozenWorldVersion != nil {
				t.Fatalf("before: world_version %s, frozen %v", got.WorldVersion, got.FrozenWorldVersion)
			}
			cp, err := old.Checkpoint(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got := restore(t, diceWorld("1.1.0"), cp, "", "up").State().Composition["main"]
			if got.WorldVersion != "1.1.0" || !reflect.DeepEqual(got.FrozenWorldVersion, tt.frozen) {
				t.Errorf("restored into 1.1.0: world_version %s, frozen_world_version %v; want 1.1.0 and %v", got.WorldVersion, ptrText(got.FrozenWorldVersion), ptrText(tt.frozen))
			}
		})
	}
}

// ptrText prints a *string for a test's message.
func ptrText(p *string) string {
	if p == nil {
		return "null"
	}
	return *p
}

type ckStep struct{ tool, args string }

// companySteps mutate every node of the company, in composite calls, with a
// failed call and moves of the clock between them.
var companySteps = []ckStep{
	{"hire", `{"name":"Ada","role":"cto"}`},
	{"invoice", `{"amount":1200}`},
	{"pay_create_charge", `{"amount":300}`},
	{"eu_refund_charge", `{"charge_id":"nope"}`},
	{"seahaven_control", `{"action":"advance_clock","seconds":3600}`},
	{"chat_send_message", `{"channel":"general","text":"hi","author":"ada"}`},
	{"shop_place_order", `{"item":"mug","quantity":2}`},
	{"accounts", `{}`},
	{"invoice", `{"amount":0}`},
	{"hire", `{"name":"Grace"}`},
	{"list_staff", `{}`},
	{"seahaven_control", `{"action":"set_clock","now":"2027-02-03T04:05:06.000Z"}`},
	{"eu_create_charge", `{"amount":77}`},
	{"invoice", `{"amount":5}`},
}

var diceSteps = []ckStep{
	{"roll", `{}`}, {"roll", `{"fail":true}`}, {"roll", `{}`}, {"roll", `{}`}, {"roll", `{"fail":true}`}, {"roll", `{}`},
}

// outcome is a call's result or error as JSON.
func outcome(t *testing.T, inst *composition.Instance, s ckStep) string {
	t.Helper()
	out, err := inst.CallJSON(context.Background(), s.tool, json.RawMessage(s.args))
	if err != nil {
		return "error: " + err.Error()
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func stateJSON(t *testing.T, inst *composition.Instance) string {
	t.Helper()
	b, err := json.Marshal(inst.State())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// fileHashes returns the content digest of every node's store file now.
func fileHashes(t *testing.T, inst *composition.Instance) map[string]string {
	t.Helper()
	cp, err := inst.Checkpoint(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for p, b := range cp.Files {
		out[p] = sqlitestore.ContentDigest(b)
	}
	return out
}

// restore opens cp: through WriteDir and ReadCheckpoint when root is set
// (as checkpoint id under root), else from memory.
func restore(t *testing.T, w *env.World, cp *composition.Checkpoint, root, id string) *composition.Instance {
	t.Helper()
	if root != "" {
		dir := filepath.Join(root, id)
		var written []byte
		if _, err := os.Stat(dir); err != nil {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			cp.Sidecar.ID = id
			if written, err = cp.WriteDir(dir); err != nil {
				t.Fatal(err)
			}
		}
		sidecar, err := os.ReadFile(filepath.Join(dir, "fixture.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if written != nil && !bytes.Equal(written, sidecar) {
			t.Fatal("WriteDir returned other bytes than the sidecar it wrote")
		}
		if cp, err = composition.ReadCheckpoint(dir, sidecar, cp.State); err != nil {
			t.Fatal(err)
		}
	}
	inst, err := composition.Open(context.Background(), w, composition.Options{Checkpoint: cp, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inst.Close() })
	return inst
}

// TestCheckpoint_ContinuesExactly checkpoints an episode after many
// mutations (composite calls, failed calls, clock moves, draws from every
// stream), restores it, and checks that the restored instance and the
// uninterrupted one agree on every later call's result, the state
// document and the store files' bytes, and that two restores of one
// checkpoint diverge only through their own calls.
func TestCheckpoint_ContinuesExactly(t *testing.T) {
	cases := []struct {
		name  string
		world *env.World
		opts  composition.Options
		steps []ckStep
	}{
		{"company", company.World, composition.Options{Fixture: company.AcmeID, ControlTools: true, ClockMode: env.ClockStep, Seed: 7}, companySteps},
		{"dice", dice, composition.Options{Seed: 11, Startup: map[string]any{"label": "blue"}}, diceSteps},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.opts.Dir = t.TempDir()
			a, err := composition.Open(context.Background(), c.world, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			half := len(c.steps) / 2
			for _, s := range c.steps[:half] {
				outcome(t, a, s)
			}
			before := stateJSON(t, a)
			cp, err := a.Checkpoint(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if got := stateJSON(t, a); got != before {
				t.Fatalf("taking the checkpoint changed the state document:\n%s\n%s", before, got)
			}
			root := t.TempDir()
			b := restore(t, c.world, cp, root, "ck")
			if got := stateJSON(t, b); got != before {
				t.Fatalf("restored state document differs:\nwant %s\ngot  %s", before, got)
			}
			fork := restore(t, c.world, cp, "", "")
			for k, s := range c.steps[half:] {
				want, got, forked := outcome(t, a, s), outcome(t, b, s), outcome(t, fork, s)
				if got != want || forked != want {
					t.Fatalf("step %d (%s %s) after the restore:\nuninterrupted %s\nrestored      %s\nfork          %s", half+k+1, s.tool, s.args, want, got, forked)
				}
			}
			if want, got := stateJSON(t, a), stateJSON(t, b); got != want {
				t.Fatalf("final state documents differ:\nwant %s\ngot  %s", want, got)
			}
			want := fileHashes(t, a)
			for name, inst := range map[string]*composition.Instance{"restored": b, "fork": fork} {
				got := fileHashes(t, inst)
				for p, h := range want {
					if got[p] != h {
						t.Errorf("%s: node %s's file has sha256 %s, the uninterrupted one's %s", name, p, got[p], h)
					}
				}
			}
			// A sibling's own call changes it alone.
			sib := restore(t, c.world, cp, "", "")
			outcome(t, sib, c.steps[0])
			if stateJSON(t, sib) == stateJSON(t, restore(t, c.world, cp, "", "")) {
				t.Error("a sibling's call did not change its state document")
			}
		})
	}
}

// TestCheckpoint_ClockAtItsMaximum: a step clock that reaches the
// clock's maximum stays there, and a wall clock past it shows it, so that
// a checkpoint taken then restores and continues as the uninterrupted
// instance does, where before the restore was refused for an instant
// outside the clock's range.
func TestCheckpoint_ClockAtItsMaximum(t *testing.T) {
	ctx := context.Background()
	last, err := time.Parse(time.RFC3339, env.MaxTime)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("Step", func(t *testing.T) {
		a := compositiontest.Open(t, dice, composition.Options{Seed: 3, Now: last.Add(-time.Second).Format(time.RFC3339), Startup: map[string]any{"label": "x"}})
		for range 3 {
			outcome(t, a, ckStep{"roll", `{}`})
		}
		cp, err := a.Checkpoint(ctx)
		if err != nil {
			t.Fatal(err)
		}
		b := restore(t, dice, cp, t.TempDir(), "ck")
		if got := a.State().Now; got != env.MaxTime {
			t.Fatalf("after 3 ticks from a second before the maximum, now is %s, want %s", got, env.MaxTime)
		}
		want, got := outcome(t, a, ckStep{"roll", `{}`}), outcome(t, b, ckStep{"roll", `{}`})
		if got != want {
			t.Fatalf("the restored instance's call returned\n%s\nthe uninterrupted one's\n%s", got, want)
		}
		if !strings.Contains(got, `"at":"9000-01-01 00:00:00"`) {
			t.Errorf("a call at the maximum stamped %s, want 9000-01-01 00:00:00", got)
		}
	})
	t.Run("Wall", func(t *testing.T) {
		a := compositiontest.Open(t, dice, composition.Options{ClockMode: env.ClockWall, Now: env.MaxTime, Startup: map[string]any{"label": "x"}})
		time.Sleep(2 * time.Millisecond) // the wall clock runs past the maximum
		cp, err := a.Checkpoint(ctx)
		if err != nil {
			t.Fatal(err)
		}
		b := restore(t, dice, cp, t.TempDir(), "ck")
		for name, inst := range map[string]*composition.Instance{"uninterrupted": a, "restored": b} {
			if got := inst.State().Now; got != env.MaxTime {
				t.Errorf("%s, a wall clock started at the maximum shows %s, want %s", name, got, env.MaxTime)
			}
		}
	})
}

// TestCheckpoint_ChangeValues restores a change log holding every kind of
// store value, the empty text and blob and text that is not UTF-8 among
// them (each kept apart from the others), through the checkpoint
// store's files and from memory: each record's values return with their
// types and bits.
func TestCheckpoint_ChangeValues(t *testing.T) {
	w := env.NewWorld(env.WorldSpec{Name: "vals", Version: "1.0.0",
		Schema: `CREATE TABLE v (id TEXT PRIMARY KEY, x ANY) STRICT;`})
	env.Tool(w, "put", "Insert every kind of value.", func(c *env.Ctx, _ struct{}) (any, error) {
		_, err := c.DB.Exec(`INSERT INTO v VALUES ('text', 'a'), ('empty text', ''), ('blob', x'00ff'),
			('empty blob', x''), ('null', NULL), ('zero', 0), ('int', -9223372036854775808),
			('real', 0.1), ('negative zero', -0.0), ('infinity', 1e999), ('nul', 'a' || char(0) || 'b'),
			('not utf-8', CAST(x'ff' AS TEXT)), ('not utf-8 either', CAST(x'61fe' AS TEXT))`)
		return nil, err
	})
	inst := compositiontest.Open(t, w, composition.Options{})
	compositiontest.Call(t, inst, "put", `{}`)
	want := fmt.Sprintf("%#v", inst.ChangeLog())
	cp, err := inst.Checkpoint(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for name, root := range map[string]string{"files": t.TempDir(), "memory": ""} {
		if got := fmt.Sprintf("%#v", restore(t, w, cp, root, "ck").ChangeLog()); got != want {
			t.Errorf("%s: restored change log\n%s\nwant\n%s", name, got, want)
		}
	}
}

// TestCheckpoint_Refused covers what a checkpoint cannot carry and what a
// restore refuses.
func TestCheckpoint_Refused(t *testing.T) {
	ctx := context.Background()
	w := env.NewWorld(env.WorldSpec{Name: "keeper", Version: "1.0.0", Schema: `CREATE TABLE t (x INTEGER);`})
	env.OnStartup(w, func(c *env.Ctx, _ struct{}) error {
		c.State["hook"] = func() {}
		return nil
	})
	inst, err := composition.Open(ctx, w, composition.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close()
	_, err = inst.Checkpoint(ctx)
	const want = `checkpoint: node main: ctx.State["hook"] holds a func(), which a checkpoint cannot carry`
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("got %v, want an error starting %q", err, want)
	}

	d, err := composition.Open(ctx, dice, composition.Options{Dir: t.TempDir(), Startup: map[string]any{"label": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	cp, err := d.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	changed := &composition.Checkpoint{Sidecar: cp.Sidecar, Files: map[string][]byte{"main": append([]byte{}, cp.Files["main"]...)}, State: cp.State}
	changed.Files["main"][200] ^= 0xff
	// Cut short, with a sidecar that vouches for the cut bytes.
	cutSidecar := *cp.Sidecar
	cutFile := cp.Files["main"][:len(cp.Files["main"])-512]
	cutSidecar.FileSHA256 = fixture.HashBytes(cutFile)
	cut := &composition.Checkpoint{Sidecar: &cutSidecar, Files: map[string][]byte{"main": cutFile}, State: cp.State}
	// A state whose fixture is none the world's nodes came from.
	acme, err := composition.Open(ctx, company.World, composition.Options{Dir: t.TempDir(), Fixture: company.AcmeID})
	if err != nil {
		t.Fatal(err)
	}
	defer acme.Close()
	acmeCP, err := acme.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	companyRecord := func(old, new string) *composition.Checkpoint {
		if !bytes.Contains(acmeCP.State, []byte(old)) {
			t.Fatalf("the state has no %s: %s", old, acmeCP.State)
		}
		return &composition.Checkpoint{Sidecar: acmeCP.Sidecar, Files: acmeCP.Files, State: bytes.Replace(acmeCP.State, []byte(old), []byte(new), 1)}
	}
	// A state whose composition records name what the world does not have.
	record := func(old, new string) *composition.Checkpoint {
		if !bytes.Contains(cp.State, []byte(old)) {
			t.Fatalf("the state has no %s: %s", old, cp.State)
		}
		return &composition.Checkpoint{Sidecar: cp.Sidecar, Files: cp.Files, State: bytes.Replace(cp.State, []byte(old), []byte(new), 1)}
	}
	for _, c := range []struct {
		name  string
		world *env.World
		cp    *composition.Checkpoint
		want  string
	}{
		{"garbage", dice, &composition.Checkpoint{Sidecar: cp.Sidecar, Files: cp.Files, State: []byte("nope")}, "composition: the checkpoint's state does not decode"},
		{"other world", w, cp, "composition: the checkpoint is of world dice, not keeper"},
		{"state of another format", dice, record(`"format":1,`, `"format":2,`), "composition: the checkpoint's state is of format 2; this version reads format 1: restore it with the version that took it"},
		{"file changed", dice, changed, "checkpoint: hash mismatch: checkpoint"},
		{"record of another node", dice, record(`"composition":[{"path":"main"`, `"composition":[{"path":"evil"`),
			`composition: the checkpoint's composition record 1 (node "evil", world "dice", scope null, aliases []) is not dice's node main`},
		{"record of another world", dice, record(`"composition":[{"path":"main","world":"dice"`, `"composition":[{"path":"main","world":"keeper"`),
			`composition: the checkpoint's composition record 1 (node "main", world "keeper", scope null, aliases []) is not dice's node main (world dice`},
		{"record of another schema", dice, record(`"schema_hash":"`, `"schema_hash":"0`), "composition: the checkpoint's composition record of node main has schema hash"},
		// A world whose schema changed since the checkpoint was taken.
		{"schema drifted", env.NewWorld(env.WorldSpec{Name: "dice", Version: "1.0.1", Schema: `CREATE TABLE rolls (id TEXT PRIMARY KEY) STRICT;`}), cp,
			`checkpoint "` + cp.Sidecar.ID + `" does not match dice's composition: schema drifted: node main (world dice 1.0.1) has schema hash`},
		{"fixture of another id", company.World, companyRecord(`"fixture":{"id":"acme"`, `"fixture":{"id":"../acme"`),
			`composition: the checkpoint's fixture: fixture: invalid id "../acme"`},
		{"fixture of other nodes", company.World, companyRecord(`"format_version":2,"file_sha256":{`, `"format_version":2,"file_sha256":{"evil":"",`),
			`composition: the checkpoint's fixture "acme" has files of nodes chat, evil, main, payments, payments_eu, shop, not of company's nodes main,`},
		{"file cut short", dice, cut, `checkpoint: checkpoint "` + cp.Sidecar.ID + `" node main: file state.sqlite is cut short`},
		{"file missing", dice, &composition.Checkpoint{Sidecar: cp.Sidecar, Files: map[string][]byte{}, State: cp.State}, `checkpoint: checkpoint "` + cp.Sidecar.ID + `" node main: file state.sqlite is missing`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := composition.Open(ctx, c.world, composition.Options{Checkpoint: c.cp, Dir: t.TempDir()})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}

// ckPoint is a type a world registers with gob.Register to keep in
// ctx.State.
type ckPoint struct{ X, Y int }

func init() { gob.Register(ckPoint{}) }

// TestCheckpoint_StateTypes: a checkpoint refuses a ctx.State value that a
// restore would give back as another type (a pointer comes back as the
// value it points to), naming the node, the key, both types and what to
// keep instead, and one gob cannot encode saying which types it can; a
// registered value returns as itself.
func TestCheckpoint_StateTypes(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		value any    // kept in ctx.State["v"]
		want  string // the start of the checkpoint's error; "" for none
	}{
		{"pointer", &ckPoint{1, 2}, `checkpoint: node main: ctx.State["v"] holds a *composition_test.ckPoint, which a restore would give back as a composition_test.ckPoint: ` +
			`encoding/gob carries a pointer as the value it points to, and decodes a registered type as the type gob.Register was given; keep composition_test.ckPoint values there, not *composition_test.ckPoint`},
		{"pointer in a list", []any{"a", &ckPoint{}}, `checkpoint: node main: ctx.State["v"][1] holds a *composition_test.ckPoint, which a restore would give back as a composition_test.ckPoint`},
		{"pointer in a map", map[string]any{"p": &ckPoint{}}, `checkpoint: node main: ctx.State["v"]["p"] holds a *composition_test.ckPoint, which a restore would give back as a composition_test.ckPoint`},
		{"unregistered map", map[string]int{"n": 1}, `checkpoint: node main: ctx.State["v"] holds a map[string]int, which a checkpoint cannot carry (gob: type not registered for interface: map[string]int): ` +
			`keep there values encoding/gob carries (strings, numbers, booleans, []byte and slices of those, time.Time, and []any and map[string]any of such values, as JSON decodes to); register any other type, a map[string]int or a struct, with gob.Register`},
		{"registered value", ckPoint{1, 2}, ""},
		{"JSON values", map[string]any{"n": int64(3), "l": []any{"x", 1.5, map[string]any{}}}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := env.NewWorld(env.WorldSpec{Name: "keeper", Version: "1.0.0", Schema: `CREATE TABLE t (x INTEGER);`})
			env.OnStartup(w, func(ec *env.Ctx, _ struct{}) error {
				ec.State["v"] = c.value
				return nil
			})
			env.Tool(w, "kind", "The type of State[\"v\"].", func(ec *env.Ctx, _ struct{}) (string, error) {
				return fmt.Sprintf("%T", ec.State["v"]), nil
			})
			inst, err := composition.Open(ctx, w, composition.Options{Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			defer inst.Close()
			cp, err := inst.Checkpoint(ctx)
			if c.want != "" {
				var bug *env.WorldBug
				if !errors.As(err, &bug) || !strings.HasPrefix(err.Error(), c.want) {
					t.Fatalf("got %v, want a *env.WorldBug starting %q", err, c.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			restored := restore(t, w, cp, "", "")
			if got, want := outcome(t, restored, ckStep{"kind", `{}`}), outcome(t, inst, ckStep{"kind", `{}`}); got != want {
				t.Errorf("restored: %s, want %s", got, want)
			}
		})
	}
}

// FuzzCheckpointState restores a checkpoint whose State is arbitrary
// bytes (a file on a shared volume): Open fails with an error or opens an
// instance that works, and never panics.
func FuzzCheckpointState(f *testing.F) {
	ctx := context.Background()
	base, err := composition.Open(ctx, dice, composition.Options{Startup: map[string]any{"label": "f"}, Dir: f.TempDir()})
	if err != nil {
		f.Fatal(err)
	}
	defer base.Close()
	outcome(&testing.T{}, base, diceSteps[0])
	cp, err := base.Checkpoint(ctx)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(cp.State)
	f.Add(cp.State[:len(cp.State)/2])
	f.Add([]byte(`{"format":1,"world":"dice","nodes":[{"path":"main","ids":"AAAA","random":"AAAA","state":"AAAA"}],"composition":[{}],"shapes":[],"changes":[{"shape":3}]}`))
	f.Add([]byte(`{"format":1,"world":"dice","nodes":[{"path":"main"}],"composition":[{}],"changes":[{"shape":0,"key":[{"i":1,"s":"x"}]}],"shapes":[{"table":"rolls"}]}`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, state []byte) {
		c := &composition.Checkpoint{Sidecar: cp.Sidecar, Files: cp.Files, State: state}
		inst, err := composition.Open(ctx, dice, composition.Options{Checkpoint: c, Dir: dir})
		if err != nil {
			return
		}
		defer inst.Close()
		inst.State()
		if _, err := inst.CallJSON(ctx, "roll", json.RawMessage(`{}`)); err != nil {
			var te *env.ToolError
			if !errors.As(err, &te) {
				t.Fatalf("a restored instance's call failed: %v", err)
			}
		}
	})
}
