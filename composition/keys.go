package composition

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/sqlitestore"
)

// keyChecks caches the outcome of sqlitestore.KeyProblems by schema text
// and untracked tables, so a tree resealed after every registration (as
// tests do) applies each schema once.
var keyChecks sync.Map // of string to keyCheck

// keyCheck is one outcome of sqlitestore.KeyProblems.
type keyCheck struct {
	problems []*sqlitestore.KeyProblem
	err      error // the schema does not apply
}

// SchemaError is a world's schema that does not apply to an empty store.
// Seal refuses such a world with a *env.WorldBug at its NewWorld line that
// wraps one, since no instance, fixture or reset could be made from it.
type SchemaError struct {
	// World is the world's name.
	World string
	// Err is SQLite's error.
	Err error
}

// Error returns "world W: the schema does not apply: " and SQLite's error.
func (e *SchemaError) Error() string {
	return "world " + e.World + ": the schema does not apply: " + e.Err.Error()
}

// Unwrap returns SQLite's error.
func (e *SchemaError) Unwrap() error { return e.Err }

// worldKeyBugs returns one *env.WorldBug per table of w's schema whose
// primary key cannot key change records exactly (see
// sqlitestore.KeyProblem), each wrapping its *sqlitestore.KeyProblem, or,
// when the schema does not apply, one wrapping a *SchemaError; each is
// placed at the NewWorld line.
func worldKeyBugs(w *env.World) []error {
	spec := w.Spec()
	untracked := slices.Clone(spec.UntrackedTables)
	slices.Sort(untracked)
	key := spec.Schema + "\x00" + strings.Join(untracked, "\x00")
	cached, ok := keyChecks.Load(key)
	kc, _ := cached.(keyCheck)
	if !ok {
		kc.problems, kc.err = sqlitestore.KeyProblems(context.Background(), spec.Schema, untracked)
		keyChecks.Store(key, kc)
	}
	if kc.err != nil {
		se := &SchemaError{World: w.Name(), Err: kc.err}
		return []error{&env.WorldBug{Message: se.Error(), Where: w.Where(), Err: se}}
	}
	var bugs []error
	for _, p := range kc.problems {
		bugs = append(bugs, &env.WorldBug{
			Message: fmt.Sprintf("world %s: the change log cannot key the rows of %v", w.Name(), p),
			Where:   w.Where(),
			Err:     p,
		})
	}
	return bugs
}

// CheckKeys checks the schema of every world of root's tree, reached
// through AddWorld edges whether or not the tree seals, and returns an error
// joining one *env.WorldBug per table whose primary key cannot key change
// records exactly, each wrapping a *sqlitestore.KeyProblem, and one per
// world whose schema does not apply, wrapping a *SchemaError; or nil.
// Seal refuses the same worlds; `seahaven check` reports them (SH301,
// SH302) even when the tree does not seal for another reason.
func CheckKeys(root *env.World) error {
	var bugs []error
	for w := range root.Tree() {
		bugs = append(bugs, worldKeyBugs(w)...)
	}
	return errors.Join(bugs...)
}
