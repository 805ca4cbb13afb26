package openenv_test

import (
	"strings"
	"testing"
	"time"

	"github.com/seahaven/seahaven/app"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/openenv"
)

// timingWorld has a tool whose argument and result hold a time.Duration.
var timingWorld = env.NewWorld(env.WorldSpec{Name: "timing", Version: "1.0.0", Schema: `CREATE TABLE t (x INTEGER) STRICT;`})

type waitArgs struct {
	Wait time.Duration `json:"wait" doc:"Nanoseconds."`
}

type waited struct {
	Took time.Duration `json:"took"`
}

var _ = env.Tool(timingWorld, "double", "Report twice the wait.", func(c *env.Ctx, in waitArgs) (waited, error) {
	return waited{Took: 2 * in.Wait}, nil
})

// TestDuration_OnTheWire: a time.Duration travels as integer nanoseconds,
// as encoding/json writes it and the schemas say, in arguments and results.
func TestDuration_OnTheWire(t *testing.T) {
	s := mustServeWorld(t, timingWorld, app.Config{}, openenv.Config{})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset"}`)
	reply := callTool(t, c, "double", `{"wait":1500}`)
	if got := field(t, reply, "data.observation.result.structured_content.took"); got == nil || got.(interface{ String() string }).String() != "3000" {
		t.Fatalf("reply %s, want took 3000", reply)
	}
	tools := roundTrip(t, c, `{"type":"mcp","data":{"jsonrpc":"2.0","id":1,"method":"tools/list"}}`)
	if !strings.Contains(tools, `"wait":{"type":"integer"`) || !strings.Contains(tools, `"took":{"type":"integer"`) {
		t.Errorf("schemas do not say integer: %.900s", tools)
	}
}
