// Package archive has fixtures that have gone wrong.
package archive

import (
	"path/filepath"
	"runtime"

	"github.com/seahaven/seahaven/env"
)

// Schema is the archive's schema.
const Schema = `CREATE TABLE boxes (id TEXT PRIMARY KEY) STRICT;`

// World keeps its fixtures beside this file.
var World = env.NewWorld(env.WorldSpec{
	Name: "archive", Version: "1.0.0", Schema: Schema,
	FixturesDir: func() string {
		_, file, _, _ := runtime.Caller(0)
		return filepath.Join(filepath.Dir(file), "fixtures")
	}(),
})
