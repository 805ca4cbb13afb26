package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// DefaultAttackPause is the pause between two attacks of one hostile
// session.
const DefaultAttackPause = 50 * time.Millisecond

// An attack is one hostile round trip: a message no honest client sends,
// aimed at one of the server's bounds.
type attack struct {
	// Name names the attack in the report.
	Name string
	// Bound is the bound the attack tests, for the report.
	Bound string
	// Messages builds the messages sent in order, each awaiting its reply;
	// the attack's outcome is the last one's. They are built when a run
	// chooses its attacks: some are tens of megabytes, which every process
	// linking this package, the server included, would otherwise hold.
	Messages func() [][]byte
	msgs     [][]byte // Messages, built once a run chose the attack
	// Closes says the server may end the connection after its reply (a
	// message past the size limit): the attacker reconnects after it.
	Closes bool
}

// hugeNameLen is the length of a free-text argument far past any maxLength
// an example world declares: an agent that writes a novel into a name.
const hugeNameLen = 7_500_000

// Attacks are what the hostile sessions send, in turn. Each aims at a bound
// of docs/deploy.md's Limits table: reply size, rows, the inspector's
// temporary storage and transactions, argument length, the change log in
// memory, the message size and the envelope's strictness.
var Attacks = []attack{
	{Name: "inspect_huge_rows", Bound: "--max-reply-bytes, inspect rows",
		Messages: inspects(`WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT 1000) SELECT zeroblob(16000000) FROM c`)},
	{Name: "inspect_open_transaction", Bound: "inspect: no transaction control",
		Messages: inspects(`BEGIN`, `SELECT count(*) FROM staff`)},
	{Name: "inspect_temp_shadow", Bound: "inspect: read-only view",
		Messages: inspects(`CREATE TEMP TABLE staff AS SELECT 1 AS id`)},
	{Name: "inspect_temp_storage", Bound: "inspect: temporary storage cap",
		Messages: inspects(`WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT 3000000) SELECT randomblob(400) AS b FROM c ORDER BY b`)},
	{Name: "hire_huge_strings", Bound: "tool argument maxLength",
		Messages: func() [][]byte {
			huge := strings.Repeat("n", hugeNameLen)
			return [][]byte{stepMessage("hire", map[string]any{"name": huge, "role": huge})}
		}},
	{Name: "state_of_grown_log", Bound: "--max-reply-bytes, change log in memory",
		Messages: raw(`{"type":"state"}`)},
	{Name: "duplicate_envelope_keys", Bound: "strict envelope",
		Messages: raw(`{"type":"state","type":"state"}`)},
	{Name: "oversized_frame", Bound: "--max-message-bytes", Closes: true,
		Messages: func() [][]byte {
			return [][]byte{stepMessage("hire", map[string]any{"name": strings.Repeat("x", 17<<20)})}
		}},
}

// inspects builds one inspect message for each query.
func inspects(queries ...string) func() [][]byte {
	return func() [][]byte {
		var msgs [][]byte
		for _, sql := range queries {
			b, _ := json.Marshal(map[string]any{"type": "inspect", "data": map[string]any{"sql": sql}})
			msgs = append(msgs, b)
		}
		return msgs
	}
}

// raw builds messages written out.
func raw(msgs ...string) func() [][]byte {
	return func() [][]byte {
		var out [][]byte
		for _, m := range msgs {
			out = append(out, []byte(m))
		}
		return out
	}
}

func stepMessage(tool string, args map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{"type": "step", "data": map[string]any{"type": "call_tool", "tool_name": tool, "arguments": args}})
	return b
}

// AttackCount is what became of one attack's round trips.
type AttackCount struct {
	// Bound is the bound the attack tests.
	Bound string `json:"bound"`
	// Answered counts replies that were not errors (a truncated inspect
	// reply, say); Refused counts error frames and tool errors; Dropped
	// counts connections the server closed; Failed counts round trips that
	// got no reply within the round-trip timeout, or a reply that is not
	// JSON: a server that hangs or breaks under the attack.
	Answered int64 `json:"answered"`
	Refused  int64 `json:"refused"`
	Dropped  int64 `json:"dropped"`
	Failed   int64 `json:"failed"`
	// Sample is the first refusal's or failure's text.
	Sample string `json:"sample,omitempty"`
}

// Hostile is the part of a Report that hostile sessions add.
type Hostile struct {
	// Attackers is Config.Attackers.
	Attackers int `json:"attackers"`
	// Attacks counts each attack's outcomes by name.
	Attacks map[string]*AttackCount `json:"attacks"`
	// BaselineP99 and P99Ratio compare the honest sessions' p99 of the
	// compared tool with a run without attackers, when one was made
	// (Compare). Zero otherwise.
	BaselineP99 time.Duration `json:"baseline_p99_ns,omitempty"`
	P99Ratio    float64       `json:"p99_ratio,omitempty"`
}

// ParseAttacks splits a comma-separated list of attack names and checks
// each names one of Attacks. An empty list means every attack.
func ParseAttacks(list string) ([]string, error) {
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	var names []string
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		if !slices.ContainsFunc(Attacks, func(a attack) bool { return a.Name == n }) {
			known := make([]string, len(Attacks))
			for i, a := range Attacks {
				known[i] = a.Name
			}
			return nil, fmt.Errorf("unknown attack %q: want one of %s", n, strings.Join(known, ", "))
		}
		names = append(names, n)
	}
	return names, nil
}

// hostile is the shared state of a run's hostile sessions.
type hostile struct {
	attacks []attack // the attacks sent, in turn, with their messages built
	pause   time.Duration

	mu     sync.Mutex // guards counts
	counts map[string]*AttackCount
}

// newHostile returns the state of hostile sessions that send the attacks
// named (all of Attacks when none is), pausing about pause between two.
func newHostile(pause time.Duration, names []string) *hostile {
	h := &hostile{counts: map[string]*AttackCount{}, pause: pause}
	for _, a := range Attacks {
		if len(names) == 0 || slices.Contains(names, a.Name) {
			a.msgs = a.Messages()
			h.attacks = append(h.attacks, a)
			h.counts[a.Name] = &AttackCount{Bound: a.Bound}
		}
	}
	return h
}

// outcome of one attack.
type outcome int

const (
	answered outcome = iota
	refused
	dropped
	failed
)

func (h *hostile) record(name string, o outcome, text string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.counts[name]
	switch o {
	case answered:
		c.Answered++
	case refused:
		c.Refused++
	case dropped:
		c.Dropped++
	case failed:
		c.Failed++
	}
	if o != answered && c.Sample == "" {
		if len(text) > 200 {
			text = text[:200] + "…"
		}
		c.Sample = text
	}
}

// allMade reports whether every attack has been made at least once.
func (h *hostile) allMade() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.counts {
		if c.Answered+c.Refused+c.Dropped+c.Failed == 0 {
			return false
		}
	}
	return true
}

// report copies the counts.
func (h *hostile) report(attackers int) *Hostile {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := &Hostile{Attackers: attackers, Attacks: map[string]*AttackCount{}}
	for k, v := range h.counts {
		c := *v
		out.Attacks[k] = &c
	}
	return out
}

// attacker runs hostile session i until stop closes: it resets, then sends
// the attacks in turn, starting at a session-dependent one, and reconnects
// whenever the server drops it.
func (r *run) attacker(ctx context.Context, i int, stop <-chan struct{}) {
	rng := rand.New(rand.NewPCG(uint64(i), 0xa77ac4))
	attacks := r.hostile.attacks
	next := rng.IntN(len(attacks))
	var c *wsClient
	defer func() {
		if c != nil {
			c.close()
		}
	}()
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		default:
		}
		if c == nil {
			var err error
			if c, err = r.dial(ctx); err != nil {
				if ctx.Err() == nil {
					r.hostile.record(attacks[next].Name, failed, "reconnect: "+err.Error())
				}
				if !r.sleep(time.Second, stop) {
					return
				}
				continue
			}
			if _, _, err := c.roundTrip(ctx, r.resetMessage(r.cfg.Sessions+i)); err != nil {
				c.close()
				c = nil
				if !r.sleep(time.Second, stop) {
					return
				}
				continue
			}
		}
		a := attacks[next]
		next = (next + 1) % len(attacks)
		o, text := r.attack(ctx, c, a)
		if ctx.Err() != nil {
			return
		}
		r.hostile.record(a.Name, o, text)
		if o == dropped || o == failed || a.Closes {
			c.close()
			c = nil
		}
		if !r.sleep(time.Duration(float64(r.hostile.pause)*(0.5+rng.Float64())), stop) {
			return
		}
	}
}

// attack sends a's messages and classifies the last reply.
func (r *run) attack(ctx context.Context, c *wsClient, a attack) (outcome, string) {
	var rep *reply
	var err error
	for _, m := range a.msgs {
		if rep, _, err = c.roundTrip(ctx, m); err != nil {
			break
		}
	}
	var ce websocket.CloseError
	switch {
	case err == nil:
		if e := rep.Data.Observation.Error; len(e) > 0 && string(e) != "null" {
			return refused, string(e)
		}
		return answered, ""
	case strings.HasPrefix(err.Error(), "error frame"):
		return refused, err.Error()
	case errors.As(err, &ce):
		return dropped, fmt.Sprintf("closed %d %s", ce.Code, ce.Reason)
	case errors.Is(err, context.DeadlineExceeded) || strings.HasPrefix(err.Error(), "no reply"):
		return failed, err.Error()
	case strings.HasPrefix(err.Error(), "reply is not JSON"):
		return failed, err.Error()
	}
	// A write or read on a connection the server tore down.
	return dropped, err.Error()
}

// writeHostile prints the hostile part of a report.
func (h *Hostile) write(b *strings.Builder) {
	fmt.Fprintf(b, "\nhostile sessions: %d\n", h.Attackers)
	names := make([]string, 0, len(h.Attacks))
	for n := range h.Attacks {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c := h.Attacks[n]
		fmt.Fprintf(b, "  %-26s answered %d, refused %d, dropped %d, failed %d  (%s)\n", n, c.Answered, c.Refused, c.Dropped, c.Failed, c.Bound)
		if c.Sample != "" {
			fmt.Fprintf(b, "  %-26s   %s\n", "", c.Sample)
		}
	}
	if h.BaselineP99 > 0 {
		fmt.Fprintf(b, "honest p99 against a run without attackers: %.2f x (%s without)\n", h.P99Ratio, round(h.BaselineP99))
	}
}

// CompareHostile fills r.Hostile's comparison with without, a run of the
// same honest sessions without attackers: the ratio of the first tool's
// p99 in r to its p99 in without.
func (r *Report) CompareHostile(without *Report) {
	if r.Hostile == nil || r.FloorRatio == nil && len(r.Latency) == 0 {
		return
	}
	key := "call_tool"
	if t := strings.Split(r.Settings.ToolMix, ":")[0]; t != "" {
		key = "call_tool:" + t
	}
	base, with := without.Latency[key].P99, r.Latency[key].P99
	if base <= 0 || with <= 0 {
		return
	}
	r.Hostile.BaselineP99 = base
	r.Hostile.P99Ratio = float64(with) / float64(base)
}

// Failures counts the attacks that got no reply in time or an unreadable
// one: each is a server that hung or broke.
func (h *Hostile) Failures() int64 {
	var n int64
	for _, c := range h.Attacks {
		n += c.Failed
	}
	return n
}
