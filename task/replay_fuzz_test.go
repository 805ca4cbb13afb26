package task_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/examples/worlds/company"
	"github.com/seahaven/seahaven/task"
)

// FuzzReplayTrajectory replays any trajectory file ReadTrajectory accepts
// on the company world, as seahaven replay does with a file its user
// gives it: the replay runs, making every call again, or is refused with
// an error; it never panics.
func FuzzReplayTrajectory(f *testing.F) {
	const header = `{"type":"header","task":"invoice_750","world":"company","world_version":"0.1.0","fixture":"acme","seed":5,"now":"","episode_id":"e"}` + "\n"
	for _, seed := range []string{
		header +
			`{"type":"call","tool":"hire","arguments":{"name":"Edsger Dijkstra"},"error":{"error_type":"tool_not_found","message":"unknown tool"},"reward":0,"done":false}` + "\n" +
			`{"type":"call","tool":"invoice","arguments":{"amount":-1},"error":{"error_type":"invalid_args","message":"m"},"reward":0,"done":false}` + "\n" +
			`{"type":"call","tool":"invoice","arguments":{"amount":750},"result":{"id":"x","amount":750},"reward":1,"done":true}` + "\n" +
			`{"type":"end","calls":3,"result":{"task":"invoice_750","reward":1,"done":true,"checks":[]},"state_sha256":{"main":"00"}}` + "\n",
		`{"type":"header","task":"","world":"company","world_version":"0.1.0","fixture":"","seed":0,"now":"2030-01-01T00:00:00Z","episode_id":"","clock_mode":"step","control_tools":true,"startup":{"plan":"pro"}}` + "\n" +
			`{"type":"call","tool":"seahaven_control","arguments":{"action":"advance_clock","seconds":60},"result":null}` + "\n" +
			`{"type":"call","tool":"list_staff","arguments":null,"arguments_text":"{bad","result":[]}` + "\n",
		`{"type":"header","world":"company","fixture":"acme","fixture_sha256":{"state.sqlite":"00"}}` + "\n",
		`{"type":"header","world":"company","checkpoint":"c"}` + "\n",
		`{"type":"header","world":"company","now":"yesterday","clock_mode":"sideways"}` + "\n",
		`{"type":"header","world":"shop"}` + "\n",
	} {
		f.Add([]byte(seed))
	}
	_, tasks := companyTask(f, "invoice_750")

	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := task.ReadTrajectory(bytes.NewReader(data))
		if err != nil || len(tr.Calls) > 16 {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		rep, err := task.ReplayTrajectory(ctx, company.World, tasks, tr, composition.Options{Dir: t.TempDir()})
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("%q: refused with an empty error", data)
			}
			return
		}
		if rep.Calls != len(tr.Calls) {
			t.Fatalf("%q: the replay made %d calls, the trajectory has %d", data, rep.Calls, len(tr.Calls))
		}
	})
}
