package scaffold_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/seahaven/seahaven/internal/scaffold"
)

// TestWorld_Names: a name the world's files would not compile with is
// refused, saying why, and nothing is written; a name near one is not.
func TestWorld_Names(t *testing.T) {
	const (
		tail        = ", so the world would not compile; pick another, such as "
		imported    = "is the name of a package the new world's files import, which the world's own name would collide with" + tail
		predeclared = "is one of Go's predeclared identifiers, which the world's name would hide from every file that imports it" + tail
		used        = "is a name the new world's tests or fixture generator declare or use, which the world's name would hide" + tail
	)
	for _, tt := range []struct {
		name string // the world's name
		why  string // the middle of the error; "" when the name is accepted
	}{
		// The packages the templates import.
		{"context", imported},
		{"env", imported},
		{"fmt", imported},
		{"composition", imported},
		{"compositiontest", imported},
		{"testing", imported},
		{"task", imported},
		{"fixture", imported},
		{"log", imported},
		{"os", imported},
		{"embed", imported},
		{"check", imported},
		// Go's predeclared identifiers.
		{"string", predeclared},
		{"len", predeclared},
		{"true", predeclared},
		{"any", predeclared},
		{"error", predeclared},
		// Identifiers of the test and the fixture generator.
		{"ctx", used},
		{"inst", used},
		{"demo", used},
		{"t", used},
		// Names whose world file would be another file, a test or built
		// for some systems only.
		{"tasks", "would name its world file tasks.go, a file the new world has already" + tail},
		{"fixtures", "would name its world file fixtures.go, a file the new world has already" + tail},
		{"stock_test", "would name its world file stock_test.go, which Go compiles only in tests" + tail},
		{"stock_linux", "would name its world file stock_linux.go, which Go builds only for some systems" + tail},
		{"stock_arm64", "would name its world file stock_arm64.go, which Go builds only for some systems" + tail},
		// Names near those.
		{"library", ""},
		{"stock", ""},
		{"contexts", ""},
		{"task_list", ""},
		{"fixtures2", ""},
		{"stock_tests", ""},
		{"logs", ""},
		{"strings", ""},
		{"demo_shop", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), tt.name)
			files, err := scaffold.World(dir, tt.name, "example.com/"+tt.name)
			if tt.why == "" {
				if err != nil || len(files) == 0 {
					t.Fatalf("World(%q) = %v, %v; want the files written", tt.name, files, err)
				}
				return
			}
			want := `world name "` + tt.name + `" ` + tt.why + `"` + tt.name + `world"`
			if err == nil || err.Error() != want {
				t.Errorf("World(%q) = %v\nwant %s", tt.name, err, want)
			}
			if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("a refused name wrote %s: %v", dir, err)
			}
		})
	}
}
