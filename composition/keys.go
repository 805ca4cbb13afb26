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

// keyChecks caches sqlitestore.KeyProblems by schema text and untracked
// tables, so a tree resealed after every registration (as tests do) applies
// each schema once.
var keyChecks sync.Map // of string to []*sqlitestore.KeyProblem

// worldKeyBugs returns one *env.WorldBug per table of w's schema whose
// primary key cannot key change records exactly (see
// sqlitestore.KeyProblem), each wrapping its *sqlitestore.KeyProblem and
// placed at the NewWorld line. A schema that does not apply yields none
// here: creating a store from it fails with SQLite's error.
func worldKeyBugs(w *env.World) []error {
	spec := w.Spec()
	untracked := slices.Clone(spec.UntrackedTables)
	for i, t := range untracked {
		untracked[i] = strings.ToLower(t)
	}
	slices.Sort(untracked)
	key := spec.Schema + "\x00" + strings.Join(untracked, "\x00")
	cached, ok := keyChecks.Load(key)
	problems, _ := cached.([]*sqlitestore.KeyProblem)
	if !ok {
		var err error
		problems, err = sqlitestore.KeyProblems(context.Background(), spec.Schema, untracked)
		if err != nil {
			return nil
		}
		keyChecks.Store(key, problems)
	}
	var bugs []error
	for _, p := range problems {
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
// records exactly, or nil. Each WorldBug wraps a *sqlitestore.KeyProblem.
// Seal refuses the same tables; `seahaven check` reports them (SH301) even
// when the tree does not seal for another reason.
func CheckKeys(root *env.World) error {
	var bugs []error
	seen := map[*env.World]bool{}
	queue := []*env.World{root}
	for len(queue) > 0 {
		w := queue[0]
		queue = queue[1:]
		if seen[w] {
			continue
		}
		seen[w] = true
		bugs = append(bugs, worldKeyBugs(w)...)
		for _, e := range w.Edges() {
			queue = append(queue, e.Child)
		}
	}
	return errors.Join(bugs...)
}
