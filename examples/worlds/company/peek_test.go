package company_test

import (
	"os"
	"testing"
)

func TestPeek(t *testing.T) {
	for _, tt := range wrong {
		ep := mustOpen(t, tt.task)
		run(t, ep, tt.calls)
		res := mustGrade(t, ep)
		os.Stdout.WriteString(tt.name + "\n")
		res.WriteText(os.Stdout)
	}
	for _, tk := range mustTasks(t) {
		ep := mustOpen(t, tk.ID)
		run(t, ep, solutions[tk.ID])
		os.Stdout.WriteString(tk.ID + " " + tk.Source + "\n")
		mustGrade(t, ep).WriteText(os.Stdout)
	}
}
