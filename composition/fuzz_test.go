package composition_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/examples/worlds/chat"
	"github.com/seahaven/seahaven/examples/worlds/company"
	"github.com/seahaven/seahaven/examples/worlds/payments"
	"github.com/seahaven/seahaven/examples/worlds/shop"
)

// fuzzWorlds are the examples' worlds, each with a read-only probe call
// that must succeed on a healthy instance.
var fuzzWorlds = []struct {
	world      *env.World
	fixture    string
	probe      string // a tool that only reads
	probeArgs  string // its arguments
	validCalls map[string]string
}{
	{payments.World, "", "list_charges", `{}`, map[string]string{
		"create_charge": `{"amount":500}`, "refund_charge": `{"charge_id":"ch_1"}`, "list_charges": `{"limit":2}`,
	}},
	{shop.World, "", "list_orders", `{}`, map[string]string{
		"place_order": `{"total":4999}`, "list_orders": `{}`,
	}},
	{chat.World, "", "read_channel", `{"channel":"general"}`, map[string]string{
		"send_message": `{"channel":"general","text":"hi","author":"ada"}`, "read_channel": `{"channel":"general"}`,
	}},
	{company.World, company.AcmeID, "list_staff", `{}`, map[string]string{
		"invoice": `{"amount":120000}`, "accounts": `{}`, "hire": `{"name":"Ada","role":"founder"}`, "list_staff": `{}`,
		"pay_create_charge": `{"amount":1}`, "pay_refund_charge": `{"charge_id":"x"}`, "pay_list_charges": `{"limit":500}`,
		"shop_place_order": `{"total":1}`, "shop_list_orders": `{}`,
		"eu_create_charge": `{"amount":9223372036854775807}`, "eu_refund_charge": `{"charge_id":""}`, "eu_list_charges": `{}`,
		"chat_send_message": `{"channel":"random","text":"x"}`, "chat_read_channel": `{"channel":"random"}`,
	}},
}

// fuzzTarget is one tool of one fuzzed instance.
type fuzzTarget struct {
	inst  *composition.Instance
	probe string // the world's probe tool and its arguments
	args  string
	tool  string
}

// FuzzCallJSON calls every tool of every example world (payments, shop,
// chat, and company with all of them added) with arbitrary JSON arguments
// on long-lived instances. Nothing panics; a refusal is a *env.ToolError of
// kind invalid_args (its message saying "invalid arguments" and naming the
// problem) or execution_error; a result encodes as JSON; and afterwards the
// instance still serves calls and every store passes PRAGMA integrity_check
// through the inspection view.
func FuzzCallJSON(f *testing.F) {
	ctx := context.Background()
	var targets []fuzzTarget
	for _, fw := range fuzzWorlds {
		inst, err := composition.Open(ctx, fw.world, composition.Options{Fixture: fw.fixture, Dir: f.TempDir()})
		if err != nil {
			f.Fatalf("open %s: %v", fw.world.Name(), err)
		}
		f.Cleanup(func() { inst.Close() })
		tools := inst.Tools()
		if len(tools) != len(fw.validCalls) {
			f.Fatalf("%s has %d tools, the seeds cover %d: add the new tools to fuzzWorlds", fw.world.Name(), len(tools), len(fw.validCalls))
		}
		for _, tl := range tools {
			args, ok := fw.validCalls[tl.Name]
			if !ok {
				f.Fatalf("%s: no seed arguments for tool %s", fw.world.Name(), tl.Name)
			}
			f.Add(uint16(len(targets)), []byte(args))
			targets = append(targets, fuzzTarget{inst: inst, probe: fw.probe, args: fw.probeArgs, tool: tl.Name})
		}
	}
	for i := range targets {
		for _, bad := range []string{
			``, `null`, `[]`, `{"amount":9223372036854775808}`, `{"amount":1e400}`, `{"amount":-1}`,
			`{"total":0}`, `{"limit":501}`, `{"name":"` + strings.Repeat("x", 201) + `"}`,
			`{"channel":"general","text":"` + strings.Repeat("y", 4001) + `"}`, `{"channel":"a\u0000b","text":"\ud800"}`,
			"{\"channel\":\"\xff\",\"text\":\"x\"}", `{"unknown":1}`, `{"amount":1,"amount":2}`,
			`{"amount":` + strings.Repeat("[", 500) + strings.Repeat("]", 500) + `}`,
		} {
			if i%3 == len(bad)%3 { // spread the bad seeds over the tools
				f.Add(uint16(i), []byte(bad))
			}
		}
	}

	f.Fuzz(func(t *testing.T, pick uint16, args []byte) {
		tg := targets[int(pick)%len(targets)]
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		out, err := tg.inst.CallJSON(cctx, tg.tool, args)
		if err != nil {
			var te *env.ToolError
			switch {
			case !errors.As(err, &te):
				t.Fatalf("%s(%q): refused with %T %v, want a *env.ToolError", tg.tool, args, err, err)
			case te.Kind == env.KindInvalidArgs:
				if !strings.HasPrefix(te.Message, "invalid arguments: ") || len(te.Message) <= len("invalid arguments: ") {
					t.Fatalf("%s(%q): invalid_args message %q does not name the problem", tg.tool, args, te.Message)
				}
			case te.Kind == env.KindExecution:
				if strings.TrimSpace(te.Message) == "" {
					t.Fatalf("%s(%q): execution_error without a message", tg.tool, args)
				}
			default:
				t.Fatalf("%s(%q): refused as %s %q, want invalid_args or execution_error", tg.tool, args, te.Kind, te.Message)
			}
		} else if _, err := json.Marshal(out); err != nil {
			t.Fatalf("%s(%q): result %#v does not encode as JSON: %v", tg.tool, args, out, err)
		}
		if _, err := tg.inst.CallJSON(cctx, tg.probe, []byte(tg.args)); err != nil {
			t.Fatalf("after %s(%q), the probe %s fails: %v", tg.tool, args, tg.probe, err)
		}
		rows, err := tg.inst.Inspect().Query(cctx, "PRAGMA integrity_check")
		if err != nil {
			t.Fatalf("after %s(%q): integrity_check: %v", tg.tool, args, err)
		}
		if want := [][]any{{"ok"}}; !reflect.DeepEqual(rows.Values, want) {
			t.Fatalf("after %s(%q): integrity_check = %v", tg.tool, args, fmt.Sprint(rows.Values))
		}
	})
}
