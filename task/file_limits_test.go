package task_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/seahaven/seahaven/task"
)

// TestParse_Bounded: a tasks file whose aliases name aliases (a billion
// laughs of 2 KB, or one whose work grows with the cube of its size) is
// refused at once, naming the line where it passed the bound, where its
// readers followed every alias and ran out of memory or ran for hours; so
// is a file larger than MaxFileBytes.
func TestParse_Bounded(t *testing.T) {
	var laughs strings.Builder
	laughs.WriteString("tasks:\n- id: t\n  instruction: x\n  checks:\n  - sql: SELECT 1\n    args: [")
	for i := range 9 {
		if i > 0 {
			laughs.WriteString(", ")
		}
		items := strings.Repeat("lol, ", 8) + "lol"
		if i > 0 {
			items = strings.TrimSuffix(strings.Repeat("*a"+string(rune('0'+i-1))+", ", 9), ", ")
		}
		laughs.WriteString("&a" + string(rune('0'+i)) + " [" + items + "]")
	}
	laughs.WriteString("]\n")
	_, err := task.Parse("tasks.yaml", []byte(laughs.String()))
	if err == nil || !strings.Contains(err.Error(), "holds more than 1000000 values with its aliases followed") || !strings.Contains(err.Error(), "tasks.yaml:6") {
		t.Errorf("a billion laughs: %v, want it refused at line 6 for its values", err)
	}
	big := "tasks:\n- id: t\n  instruction: " + strings.Repeat("x", task.MaxFileBytes) + "\n"
	if _, err := task.Parse("tasks.yaml", []byte(big)); err == nil || !strings.Contains(err.Error(), "more than the 4194304 a tasks file may hold") {
		t.Errorf("a file over the bound: %v", err)
	}
}

// TestReadFile_NotRegular: a tasks file that is a named pipe is refused
// before it is opened, where reading it waited forever.
func TestReadFile_NotRegular(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, task.FileName), 0o600); err != nil {
		t.Skip("no named pipes here:", err)
	}
	if _, err := task.ReadFile(os.DirFS(dir)); err == nil || !strings.Contains(err.Error(), "tasks.yaml is not a regular file") {
		t.Errorf("ReadFile of a named pipe: %v", err)
	}
}

// TestParse_FixtureID: a task's fixture that is no fixture id (one that
// could leave the fixtures directory) is refused at its key, where it was
// listed as a missing fixture.
func TestParse_FixtureID(t *testing.T) {
	text := "tasks:\n- id: t\n  instruction: x\n  fixture: ../acme\n  checks:\n  - sql: SELECT 1\n"
	_, err := task.Parse("tasks.yaml", []byte(text))
	if err == nil || !strings.Contains(err.Error(), `tasks.yaml:4: tasks[0].fixture: fixture: invalid id "../acme"`) {
		t.Errorf("Parse: %v, want the fixture refused at its line and key", err)
	}
}
