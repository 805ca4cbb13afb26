package openenv_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/seahaven/seahaven/internal/testfs"
	"github.com/seahaven/seahaven/openenv"
)

// exposition is one scrape of /metrics, parsed.
type exposition map[string]*dto.MetricFamily

// scrape reads /metrics and parses the text exposition, which must pass
// Prometheus's own lint (promtool check metrics): metric names, units,
// suffixes and help texts as its conventions have them.
func (s *testServer) scrape(tb testing.TB) exposition {
	tb.Helper()
	code, body, resp := s.httpDo(tb, "GET", "/metrics", "", nil)
	if code != http.StatusOK {
		tb.Fatalf("GET /metrics: status %d, body %s", code, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		tb.Errorf("GET /metrics: Content-Type %q", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		tb.Fatalf("parsing /metrics: %v\n%s", err, body)
	}
	problems, err := promlint.NewWithMetricFamilies(slices.Collect(maps.Values(fams))).Lint()
	if err != nil {
		tb.Fatalf("linting /metrics: %v", err)
	}
	for _, p := range problems {
		tb.Errorf("/metrics: %s: %s", p.Metric, p.Text)
	}
	return fams
}

// value returns the value of the series name{labels}: a counter's or
// gauge's value, or a histogram's sample count. It fails when the series
// does not exist.
func (e exposition) value(tb testing.TB, name string, labels ...string) float64 {
	tb.Helper()
	fam, ok := e[name]
	if !ok {
		tb.Fatalf("no metric %s", name)
	}
	want := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
next:
	for _, m := range fam.GetMetric() {
		if len(m.GetLabel()) != len(want) {
			continue
		}
		for _, l := range m.GetLabel() {
			if v, ok := want[l.GetName()]; !ok || v != l.GetValue() {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue()
		case m.Gauge != nil:
			return m.GetGauge().GetValue()
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount())
		}
		tb.Fatalf("%s%v has no counter, gauge or histogram", name, labels)
	}
	tb.Fatalf("no series %s%v", name, labels)
	return 0
}

func TestServer_Metrics(t *testing.T) {
	t.Parallel()
	s := mustServe(t, newFake(t), openenv.Config{MaxSessions: 3})
	before := s.scrape(t)
	for _, tt := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"seahaven_sessions_max", nil, 3},
		{"seahaven_sessions", []string{"transport", "ws"}, 0},
		{"seahaven_sessions", []string{"transport", "http"}, 0},
		{"seahaven_resets_total", []string{"outcome", "ok"}, 0},
		{"seahaven_resets_total", []string{"outcome", "error"}, 0},
		{"seahaven_instances_open", nil, 0},
		{"seahaven_capacity_rejections_total", []string{"transport", "ws"}, 0},
		{"seahaven_idle_reaps_total", []string{"transport", "ws"}, 0},
		{"seahaven_reset_duration_seconds", nil, 0},
	} {
		if got := before.value(t, tt.name, tt.labels...); got != tt.want {
			t.Errorf("before: %s%v = %v, want %v", tt.name, tt.labels, got, tt.want)
		}
	}
	for _, name := range []string{"go_goroutines", "go_memstats_heap_alloc_bytes", "process_resident_memory_bytes", "process_open_fds"} {
		if _, ok := before[name]; !ok {
			t.Errorf("no %s: the Go runtime and process collectors are missing", name)
		}
	}

	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset","data":{"seed":1}}`)
	roundTrip(t, c, `{"type":"reset","data":{"fixture":"nope"}}`)
	roundTrip(t, c, `{"type":"step","data":{"type":"list_tools"}}`)
	roundTrip(t, c, `{"type":"step","data":{"type":"call_tool","tool_name":"add","arguments":{"a":1,"b":2}}}`)
	roundTrip(t, c, `{"type":"step","data":{"type":"call_tool","tool_name":"add","arguments":{"a":3,"b":4}}}`)
	roundTrip(t, c, `{"type":"step","data":{"type":"call_tool","tool_name":"fail","arguments":{}}}`)
	roundTrip(t, c, `{"type":"step","data":{"type":"call_tool","tool_name":"no_such_tool_`+strings.Repeat("x", 50)+`","arguments":{}}}`)
	roundTrip(t, c, `{"type":"step","data":{"type":"call_tool","tool_name":"boom","arguments":{}}}`)
	roundTrip(t, c, `{"type":"step","data":{"type":"call_tool","tool_name":"no_such_tool_boom","arguments":{}}}`)
	roundTrip(t, c, `{"type":"inspect","data":{"sql":"SELECT message FROM echoes"}}`)
	roundTrip(t, c, `{"type":"inspect","data":{"sql":"SELECT * FROM nowhere"}}`)
	roundTrip(t, c, `{"type":"state"}`)
	roundTrip(t, c, `{"type":"dance"}`)
	roundTrip(t, c, `not json`)
	code, body, _ := s.httpDo(t, "POST", "/reset", `{"seed":2}`, nil)
	if code != http.StatusOK {
		t.Fatalf("POST /reset: %d %s", code, body)
	}

	after := s.scrape(t)
	for _, tt := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"seahaven_sessions", []string{"transport", "ws"}, 1},
		{"seahaven_sessions", []string{"transport", "http"}, 1},
		{"seahaven_sessions", []string{"transport", "mcp"}, 0},
		{"seahaven_sessions_opened_total", []string{"transport", "ws"}, 1},
		{"seahaven_sessions_opened_total", []string{"transport", "http"}, 1},
		{"seahaven_resets_total", []string{"outcome", "ok"}, 2},
		{"seahaven_resets_total", []string{"outcome", "error"}, 1},
		{"seahaven_reset_duration_seconds", nil, 3},
		{"seahaven_instances_open", nil, 2},
		{"seahaven_tool_calls_total", []string{"tool", "add", "outcome", "ok"}, 2},
		{"seahaven_tool_calls_total", []string{"tool", "fail", "outcome", "execution_error"}, 1},
		{"seahaven_tool_calls_total", []string{"tool", "_unknown", "outcome", "tool_not_found"}, 1},
		{"seahaven_tool_calls_total", []string{"tool", "boom", "outcome", "panic"}, 1},
		{"seahaven_tool_calls_total", []string{"tool", "_unknown", "outcome", "panic"}, 1},
		{"seahaven_tool_call_duration_seconds", []string{"tool", "add"}, 2},
		{"seahaven_inspect_queries_total", []string{"outcome", "ok"}, 1},
		{"seahaven_inspect_queries_total", []string{"outcome", "error"}, 1},
		{"seahaven_ws_messages_total", []string{"type", "reset"}, 2},
		{"seahaven_ws_messages_total", []string{"type", "step"}, 7},
		{"seahaven_ws_messages_total", []string{"type", "inspect"}, 2},
		{"seahaven_ws_messages_total", []string{"type", "state"}, 1},
		{"seahaven_ws_messages_total", []string{"type", "invalid"}, 2},
	} {
		if got := after.value(t, tt.name, tt.labels...); got != tt.want {
			t.Errorf("%s%v = %v, want %v", tt.name, tt.labels, got, tt.want)
		}
	}
	// A client cannot mint series: no tool label carries the unknown name.
	for _, m := range after["seahaven_tool_calls_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if strings.HasPrefix(l.GetValue(), "no_such_tool") {
				t.Errorf("a series is labelled with the unknown tool name %q", l.GetValue())
			}
		}
	}

	t.Run("InstancesClosed", func(t *testing.T) {
		send(t, c, `{"type":"close"}`)
		waitFor(t, "the WebSocket session to end", func() bool { return len(s.Sessions()) == 1 })
		m := s.scrape(t)
		if got := m.value(t, "seahaven_instances_open"); got != 1 {
			t.Errorf("seahaven_instances_open = %v after closing one of two sessions, want 1", got)
		}
		if got := m.value(t, "seahaven_sessions", "transport", "ws"); got != 0 {
			t.Errorf("seahaven_sessions{transport=ws} = %v after close", got)
		}
	})
}

func TestServer_Metrics_Capacity(t *testing.T) {
	t.Parallel()
	s := mustServe(t, newFake(t), openenv.Config{MaxSessions: 1})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"state"}`)
	refused := s.dial(t)
	if code := str(t, recv(t, refused), "data.code"); code != "CAPACITY_REACHED" {
		t.Fatalf("code %s", code)
	}
	s.rpc(t, `{"jsonrpc":"2.0","id":1,"method":"openenv/session/create"}`)
	m := s.scrape(t)
	if got := m.value(t, "seahaven_capacity_rejections_total", "transport", "ws"); got != 1 {
		t.Errorf("ws rejections = %v, want 1", got)
	}
	if got := m.value(t, "seahaven_capacity_rejections_total", "transport", "mcp"); got != 1 {
		t.Errorf("mcp rejections = %v, want 1", got)
	}
}

func TestServer_Metrics_IdleReaps(t *testing.T) {
	t.Parallel()
	s := mustServe(t, newFake(t), openenv.Config{IdleTimeout: 20 * time.Millisecond})
	c := s.dial(t)
	// On a busy machine the reaper may close the socket before its reset is
	// read, 20ms after the dial: the session is reaped either way, so the
	// reset's reply or the close both do.
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"reset"}`)); err == nil {
		if _, b, err := c.Read(ctx); err == nil && !strings.Contains(string(b), `"type":"observation"`) {
			t.Fatalf("reset: %s", b)
		}
	}
	s.httpDo(t, "POST", "/reset", `{}`, nil)
	waitFor(t, "the reaper", func() bool { return len(s.Sessions()) == 0 })
	m := s.scrape(t)
	for _, transport := range []string{"ws", "http"} {
		if got := m.value(t, "seahaven_idle_reaps_total", "transport", transport); got != 1 {
			t.Errorf("seahaven_idle_reaps_total{transport=%s} = %v, want 1", transport, got)
		}
	}
	if got := m.value(t, "seahaven_instances_open"); got != 0 {
		t.Errorf("seahaven_instances_open = %v after the reaps", got)
	}
}

func TestServer_Metrics_PerServer(t *testing.T) {
	t.Parallel()
	// Two servers in one process count separately.
	a := mustServe(t, newFake(t), openenv.Config{})
	b := mustServe(t, newFake(t), openenv.Config{})
	a.httpDo(t, "POST", "/reset", `{}`, nil)
	if got := a.scrape(t).value(t, "seahaven_resets_total", "outcome", "ok"); got != 1 {
		t.Errorf("a: resets %v, want 1", got)
	}
	if got := b.scrape(t).value(t, "seahaven_resets_total", "outcome", "ok"); got != 0 {
		t.Errorf("b: resets %v, want 0", got)
	}
	if a.Registry() == b.Registry() {
		t.Error("two servers share a registry")
	}
}

func TestServer_Metrics_SessionlessCall(t *testing.T) {
	t.Parallel()
	s := mustServe(t, newFake(t), openenv.Config{})
	s.rpc(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":1}}}`)
	m := s.scrape(t)
	if got := m.value(t, "seahaven_tool_calls_total", "tool", "add", "outcome", "ok"); got != 1 {
		t.Errorf("calls = %v, want 1", got)
	}
	if got := m.value(t, "seahaven_resets_total", "outcome", "ok"); got != 1 {
		t.Errorf("resets = %v, want 1", got)
	}
	if got := m.value(t, "seahaven_instances_open"); got != 0 {
		t.Errorf("instances open = %v after a sessionless call, want 0", got)
	}
}

// TestServer_Metrics_AbortedScrape closes a scrape's connection after its
// headers, while the server still has most of its metric families to send:
// the failure is one debug record, not one error record per family.
func TestServer_Metrics_AbortedScrape(t *testing.T) {
	var logs testfs.Buffer
	s := mustServe(t, newFake(t), openenv.Config{Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	// Families of some 5 MiB in all, more than the sockets' buffers hold.
	label := strings.Repeat("x", 200)
	for i := range 20 {
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: fmt.Sprintf("a_filler_%02d", i), Help: "Filler."}, []string{"l"})
		for j := range 1000 {
			g.WithLabelValues(fmt.Sprintf("%s%d", label, j)).Set(1)
		}
		s.Registry().MustRegister(g)
	}
	c, err := net.Dial("tcp", s.ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c.(*net.TCPConn).SetReadBuffer(4 << 10)
	io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(waitLimit))
	if _, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil {
		t.Fatal(err)
	}
	c.Close()
	waitFor(t, "the aborted scrape's record", func() bool { return strings.Contains(logs.String(), "metric family") })
	var failed []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line is not JSON: %v\n%s", err, line)
		}
		if rec["level"] == "ERROR" {
			t.Errorf("a record at error level: %s", line)
		}
		if rec["msg"] == "openenv: a /metrics scrape failed" {
			failed = append(failed, rec)
		}
	}
	if len(failed) != 1 || failed[0]["level"] != "DEBUG" || failed[0]["errors"].(float64) < 2 {
		t.Errorf("the aborted scrape was logged as %v, want one debug record counting its failed families", failed)
	}
}

// failingCollector is a collector whose every collection fails.
type failingCollector struct{ desc *prometheus.Desc }

func (c failingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }
func (c failingCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.NewInvalidMetric(c.desc, errors.New("the source is gone"))
}

// TestServer_Metrics_GatherError: a collector's failure, which is not the
// client's, is one warn record; the scrape serves the other series.
func TestServer_Metrics_GatherError(t *testing.T) {
	var logs testfs.Buffer
	s := mustServe(t, newFake(t), openenv.Config{Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	s.Registry().MustRegister(failingCollector{prometheus.NewDesc("a_failing", "Fails.", nil, nil)})
	if e := s.scrape(t); e.value(t, "seahaven_sessions_max") <= 0 {
		t.Error("the scrape lacks seahaven_sessions_max")
	}
	var failed []string
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if strings.Contains(line, "metrics") {
			failed = append(failed, line)
		}
	}
	if len(failed) != 1 || !strings.Contains(failed[0], `"level":"WARN","msg":"openenv: a /metrics scrape failed","err":"error gathering metrics:`) || !strings.Contains(failed[0], "the source is gone") {
		t.Errorf("the failed gathering was logged as %q, want one warn record", failed)
	}
}
