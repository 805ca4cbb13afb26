package check

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/sqlitestore"
)

// keyFindings reports SH301: one finding per table, in any world of w's
// tree, whose primary key cannot key change records exactly, at the line
// that declared its world. The seal refuses the same tables; sealFindings
// leaves them to this check, which reaches them even when the tree does not
// seal for another reason.
//
// It reports SH302 the same way, for each world of the tree whose schema
// does not apply.
func keyFindings(w *env.World) []Finding {
	var fs []Finding
	for _, e := range unjoin(composition.CheckKeys(w)) {
		code := "SH301"
		if _, ok := errors.AsType[*composition.SchemaError](e); ok {
			code = "SH302"
		}
		fs = append(fs, finding(at(whereOf(e), w), code, "%v", e))
	}
	return fs
}

// untrackedFindings reports SH303: one finding per name in the
// UntrackedTables of a world of w's tree that names no table or view its
// schema creates (compared as SQLite compares names), at the line that
// declared that world. A schema that does not apply is SH302's.
func untrackedFindings(ctx context.Context, w *env.World) []Finding {
	var fs []Finding
	for x := range w.Tree() {
		spec := x.Spec()
		if len(spec.UntrackedTables) == 0 {
			continue
		}
		tables, err := sqlitestore.SchemaTables(ctx, spec.Schema)
		if err != nil {
			continue
		}
		for _, name := range spec.UntrackedTables {
			if !slices.ContainsFunc(tables, func(t string) bool { return sqlitestore.SameName(t, name) }) {
				fs = append(fs, finding(at("", x), "SH303",
					"world %s: UntrackedTables names %q, which its schema does not create (it creates: %s); a misspelt name leaves the table it meant in the change log",
					x.Name(), name, strings.Join(tables, ", ")))
			}
		}
	}
	return fs
}

// whereOf returns the registration the *env.WorldBug in err's chain names,
// or "".
func whereOf(err error) string {
	if bug, ok := errors.AsType[*env.WorldBug](err); ok {
		return bug.Where
	}
	return ""
}

// isKeyProblem reports whether a seal error is one keyFindings reports.
func isKeyProblem(err error) bool {
	var kp *sqlitestore.KeyProblem
	var se *composition.SchemaError
	return errors.As(err, &kp) || errors.As(err, &se)
}

// unjoin returns the errors an errors.Join holds, err alone otherwise, and
// none for nil.
func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
