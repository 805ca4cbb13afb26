package env

import (
	"cmp"
	"context"
	"encoding/json"
	"time"
)

// Ctx is what a tool, a middleware layer or a startup hook receives: the
// store, state, id stream and added worlds of the node it runs for, the call
// being made, the instance clock and the call's context. A Ctx lives for one
// call and is not safe for concurrent use.
type Ctx struct {
	// DB is this node's store.
	DB DB
	// State is this node's own state map, kept for the instance's life.
	State map[string]any
	// IDs is this node's seeded id stream.
	IDs *IDs
	// Worlds reaches the worlds this node's world added.
	Worlds *Worlds
	// Call describes the call being made; nil in startup hooks and bulk blocks.
	Call *CallInfo

	ctx   context.Context
	clock func() time.Time
}

// NewCtx assembles a Ctx. Engines call it; world code receives one.
func NewCtx(ctx context.Context, clock func() time.Time, db DB, state map[string]any, ids *IDs, worlds *Worlds, call *CallInfo) *Ctx {
	return &Ctx{DB: db, State: state, IDs: ids, Worlds: worlds, Call: call, ctx: ctx, clock: clock}
}

// Context returns the call's context: cancelled when the call's deadline
// passes or its client goes away.
func (c *Ctx) Context() context.Context {
	return cmp.Or(c.ctx, context.Background())
}

// Now returns the instance clock's time, the same one every SQL date
// function of every node reads.
func (c *Ctx) Now() time.Time {
	if c.clock == nil {
		return time.Now().UTC()
	}
	return c.clock()
}

// CallInfo describes one call. It is the same object in every middleware
// layer of the call.
type CallInfo struct {
	// Tool is the name the call was made by: the published name for an agent
	// call, the owning world's own name for a call through a handle.
	Tool string
	// Own is the tool's name in its owning world's registry.
	Own string
	// Node is the owning node's canonical path ("main" for the root).
	Node string
	// Internal is true for a call made by host code through a handle.
	Internal bool
	// Arguments are the call's arguments as JSON, as the caller gave them
	// (a Go value as encoding/json encodes it).
	Arguments json.RawMessage
}

// Row is one result row, column name to value (nil, int64, float64, string
// or []byte).
type Row map[string]any

// Result reports what a statement changed.
type Result struct {
	RowsAffected int64
	LastInsertID int64
}

// DB is one node's store as world code sees it. Statements run inside the
// call's transaction when there is one; outside it (a handle's DB used
// directly) they autocommit one by one unless wrapped in Transaction. The
// transaction is the engine's: BEGIN, COMMIT, END, ROLLBACK and a SAVEPOINT
// outside a transaction fail with a *WorldBug (SAVEPOINT, RELEASE and
// ROLLBACK TO inside one work, on the savepoints opened since the last
// Transaction or nested call on the store began), and once SQLite has
// rolled the call's transaction back itself (RAISE(ROLLBACK), INSERT OR
// ROLLBACK) every later statement of the call fails. A DB belongs to one
// call and is not safe for concurrent use.
type DB interface {
	// Exec runs one statement with positional arguments.
	Exec(sql string, args ...any) (Result, error)
	// Rows runs a query and returns every row.
	Rows(sql string, args ...any) ([]Row, error)
	// One returns the first row, or nil when there is none.
	One(sql string, args ...any) (Row, error)
	// Transaction runs fn in a transaction (a savepoint when one is open),
	// committing when fn returns nil and rolling back otherwise.
	Transaction(fn func() error) error
	// Conn returns the raw driver connection (*sqlite3.Conn) as an escape
	// hatch; it is valid only until the call returns.
	Conn() (any, error)
}
