package composition_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ncruces/go-sqlite3"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/compositiontest"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/examples/worlds/company"
	"github.com/seahaven/seahaven/examples/worlds/payments"
	"github.com/seahaven/seahaven/fixture"
)

// The raw baselines use the driver directly, with the settings instance
// stores use, so each engine figure can be read as a ratio to the SQL it
// runs.

const rawPragmas = `PRAGMA journal_mode=MEMORY; PRAGMA locking_mode=EXCLUSIVE; PRAGMA synchronous=OFF; PRAGMA foreign_keys=ON; PRAGMA cache_size=-256;`

type rawStore struct {
	c                     *sqlite3.Conn
	begin, commit, insert *sqlite3.Stmt
}

func openRaw(b *testing.B, path, schema, insert string) *rawStore {
	b.Helper()
	c, err := sqlite3.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := c.Exec(rawPragmas + schema); err != nil {
		b.Fatal(err)
	}
	r := &rawStore{c: c}
	for _, s := range []struct {
		p   **sqlite3.Stmt
		sql string
	}{{&r.begin, "BEGIN IMMEDIATE"}, {&r.commit, "COMMIT"}, {&r.insert, insert}} {
		if *s.p, _, err = c.Prepare(s.sql); err != nil {
			b.Fatal(err)
		}
	}
	b.Cleanup(func() { r.begin.Close(); r.commit.Close(); r.insert.Close(); c.Close() })
	return r
}

func (r *rawStore) insertTxn(b *testing.B, id string, amount int64) {
	if err := r.begin.Exec(); err != nil {
		b.Fatal(err)
	}
	r.insert.BindText(1, id)
	r.insert.BindInt64(2, amount)
	if err := r.insert.Exec(); err != nil {
		b.Fatal(err)
	}
	if err := r.commit.Exec(); err != nil {
		b.Fatal(err)
	}
}

func uuidish() string {
	var b [16]byte
	rand.Read(b[:])
	return fmt.Sprintf("%x", b)
}

// engineCall opens an instance of w (from fixture, or genesis when "") for
// the benchmark and returns one agent call of tool with {"amount": 500}.
func engineCall(b *testing.B, w *env.World, fixture, tool string) func() {
	b.Helper()
	inst, err := composition.Open(context.Background(), w, composition.Options{Fixture: fixture, Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { inst.Close() })
	ctx, args := context.Background(), []byte(`{"amount": 500}`)
	return func() {
		if _, err := inst.CallJSON(ctx, tool, args); err != nil {
			b.Fatal(err)
		}
	}
}

// rawCreateCharge returns create_charge's SQL on a raw connection: one
// prepared BEGIN/INSERT/COMMIT.
func rawCreateCharge(b *testing.B) func() {
	r := openRaw(b, filepath.Join(b.TempDir(), "raw.sqlite"), payments.World.Spec().Schema,
		"INSERT INTO charges (id, amount) VALUES (?, ?)")
	return func() { r.insertTxn(b, uuidish(), 500) }
}

// rawInvoice returns invoice's SQL on two raw connections: one insert
// transaction on each store.
func rawInvoice(b *testing.B) func() {
	dir := b.TempDir()
	pay := openRaw(b, filepath.Join(dir, "p.sqlite"), payments.World.Spec().Schema, "INSERT INTO charges (id, amount) VALUES (?, ?)")
	main := openRaw(b, filepath.Join(dir, "m.sqlite"), company.World.Spec().Schema, "INSERT INTO invoices (id, charge_id, amount) VALUES (?, 'c', ?)")
	return func() {
		pay.insertTxn(b, uuidish(), 500)
		main.insertTxn(b, uuidish(), 500)
	}
}

// loop runs op once per iteration.
func loop(b *testing.B, op func()) {
	for b.Loop() {
		op()
	}
}

// BenchmarkCall_CreateCharge is one agent call of a one-insert tool on a
// one-node world: validation, activation, transaction, change capture.
func BenchmarkCall_CreateCharge(b *testing.B) {
	loop(b, engineCall(b, payments.World, "", "create_charge"))
}

// BenchmarkRaw_CreateCharge is the same insert transaction on a raw
// connection with prepared BEGIN/INSERT/COMMIT.
func BenchmarkRaw_CreateCharge(b *testing.B) { loop(b, rawCreateCharge(b)) }

// BenchmarkCall_Invoice is the company's invoice call: two nodes, a nested
// handle call, two transactions, change capture on both.
func BenchmarkCall_Invoice(b *testing.B) {
	loop(b, engineCall(b, company.World, company.AcmeID, "invoice"))
}

// BenchmarkRaw_Invoice does the invoice's SQL on two raw connections: one
// insert transaction on each store.
func BenchmarkRaw_Invoice(b *testing.B) { loop(b, rawInvoice(b)) }

// BenchmarkOpen_Genesis opens and closes a one-node genesis instance.
func BenchmarkOpen_Genesis(b *testing.B) {
	dir := b.TempDir()
	ctx := context.Background()
	for b.Loop() {
		inst, err := composition.Open(ctx, payments.World, composition.Options{Dir: dir})
		if err != nil {
			b.Fatal(err)
		}
		inst.Close()
	}
}

// BenchmarkOpen_Acme opens the company world from acme (five nodes) and
// makes its first call, which opens every connection it needs; then closes.
func BenchmarkOpen_Acme(b *testing.B) {
	dir := b.TempDir()
	ctx := context.Background()
	for b.Loop() {
		inst, err := composition.Open(ctx, company.World, composition.Options{Fixture: company.AcmeID, Dir: dir})
		if err != nil {
			b.Fatal(err)
		}
		inst.Close()
	}
}

// BenchmarkRaw_CopyAndOpen is the floor of BenchmarkOpen_Acme: copy the
// fixture's files and open one bare connection per node, then close.
func BenchmarkRaw_CopyAndOpen(b *testing.B) {
	src := filepath.Join(compositiontest.FixturesDir(b, company.World), company.AcmeID)
	s, err := fixture.Read(compositiontest.FixturesDir(b, company.World), company.AcmeID)
	if err != nil {
		b.Fatal(err)
	}
	files := []string{fixture.RootFile}
	for _, n := range s.Nodes {
		files = append(files, n.File)
	}
	dir := b.TempDir()
	for b.Loop() {
		d, err := os.MkdirTemp(dir, "raw-")
		if err != nil {
			b.Fatal(err)
		}
		var conns []*sqlite3.Conn
		for _, f := range files {
			copyFile(b, filepath.Join(src, f), filepath.Join(d, f))
			c, err := sqlite3.Open(filepath.Join(d, f))
			if err != nil {
				b.Fatal(err)
			}
			conns = append(conns, c)
		}
		for _, c := range conns {
			c.Close()
		}
		os.RemoveAll(d)
	}
}

func copyFile(b *testing.B, from, to string) {
	in, err := os.Open(from)
	if err != nil {
		b.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		b.Fatal(err)
	}
	out.Close()
}

// interleave runs call and raw in alternating blocks of ratioBlock
// iterations and reports their mean costs and ratio, so that both see the
// same machine: on a shared machine, separate benchmarks drift apart by more
// than the effect measured. Within a block each runs warm, as it does in its
// own benchmark.
func interleave(b *testing.B, call, raw func()) {
	var tCall, tRaw time.Duration
	var nCall, nRaw int
	i := 0
	for b.Loop() {
		t0 := time.Now()
		if (i/ratioBlock)%2 == 0 {
			call()
			tCall += time.Since(t0)
			nCall++
		} else {
			raw()
			tRaw += time.Since(t0)
			nRaw++
		}
		i++
	}
	if nCall == 0 || nRaw == 0 {
		return // too few iterations for a ratio
	}
	perCall := float64(tCall.Nanoseconds()) / float64(nCall)
	perRaw := float64(tRaw.Nanoseconds()) / float64(nRaw)
	b.ReportMetric(perCall, "call-ns/op")
	b.ReportMetric(perRaw, "raw-ns/op")
	b.ReportMetric(perCall/perRaw, "call/raw")
}

// ratioBlock is the block length of interleave.
const ratioBlock = 100

// BenchmarkRatio_CreateCharge is BenchmarkCall_CreateCharge against
// BenchmarkRaw_CreateCharge, interleaved.
func BenchmarkRatio_CreateCharge(b *testing.B) {
	interleave(b, engineCall(b, payments.World, "", "create_charge"), rawCreateCharge(b))
}

// BenchmarkRatio_Invoice is BenchmarkCall_Invoice against
// BenchmarkRaw_Invoice, interleaved.
func BenchmarkRatio_Invoice(b *testing.B) {
	interleave(b, engineCall(b, company.World, company.AcmeID, "invoice"), rawInvoice(b))
}
