package openenv_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/seahaven/seahaven/compositiontest"
	"github.com/seahaven/seahaven/examples/worlds/company"
	"github.com/seahaven/seahaven/fixture"
	"github.com/seahaven/seahaven/openenv"
)

func TestServer_Composition(t *testing.T) {
	s := mustServeCompany(t, openenv.Config{})
	code, body, _ := s.httpDo(t, "GET", "/composition", "", nil)
	if code != http.StatusOK {
		t.Fatalf("GET /composition: %d %s", code, body)
	}
	var got openenv.Composition
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	// The schema hashes are checked against the acme sidecar, which the
	// fixture code computed on its own when it froze acme.
	acme, err := fixture.Read(compositiontest.FixturesDir(t, company.World), company.AcmeID)
	if err != nil {
		t.Fatal(err)
	}
	hash := map[string]string{"main": acme.SchemaHash}
	for _, n := range acme.Nodes {
		hash[n.Path] = n.SchemaHash
	}
	eu := "eu"
	want := openenv.Composition{
		World: "company", WorldVersion: company.World.Version(),
		Nodes: []openenv.CompositionNode{
			{Path: "main", World: "company", WorldVersion: "0.1.0", Aliases: []string{}, SchemaHash: hash["main"], File: "state.sqlite"},
			{Path: "payments", World: "payments", WorldVersion: "1.0.0", Aliases: []string{"shop/payments"}, SchemaHash: hash["payments"], File: "state.payments.sqlite"},
			{Path: "shop", World: "shop", WorldVersion: "1.0.0", Aliases: []string{}, SchemaHash: hash["shop"], File: "state.shop.sqlite"},
			{Path: "payments_eu", World: "payments", WorldVersion: "1.0.0", Scope: &eu, Aliases: []string{}, SchemaHash: hash["payments_eu"], File: "state.payments_eu.sqlite"},
			{Path: "chat", World: "chat", WorldVersion: "1.0.0", Aliases: []string{}, SchemaHash: hash["chat"], File: "state.chat.sqlite"},
		},
		Edges: []openenv.CompositionEdge{
			{From: "main", Name: "payments", To: "payments", Prefix: "pay_"},
			{From: "main", Name: "shop", To: "shop", Prefix: "shop_"},
			{From: "main", Name: "payments_eu", To: "payments_eu", Prefix: "eu_", Store: &eu},
			{From: "main", Name: "chat", To: "chat", Prefix: "chat_"},
			// The shop adds the company's own payments node and hides its tools.
			{From: "shop", Name: "payments", To: "payments", Allow: []string{}},
		},
	}
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", " ")
		w, _ := json.MarshalIndent(want, "", " ")
		t.Errorf("GET /composition =\n%s\nwant\n%s", g, w)
	}
	// Unset lists are null and an empty allow list is [], so a client can
	// tell "no list" from "allow nothing".
	var raw struct {
		Nodes []map[string]json.RawMessage `json:"nodes"`
		Edges []map[string]json.RawMessage `json:"edges"`
	}
	if err := json.Unmarshal([]byte(body), &raw); err != nil || len(raw.Nodes) != 5 || len(raw.Edges) != 5 {
		t.Fatalf("body %s: %v", body, err)
	}
	for _, c := range []struct {
		name string          // what is checked
		got  json.RawMessage // the raw JSON value
		want string
	}{
		{"payments edge allow", raw.Edges[0]["allow"], "null"},
		{"payments edge block", raw.Edges[0]["block"], "null"},
		{"payments edge store", raw.Edges[0]["store"], "null"},
		{"shop's payments edge allow", raw.Edges[4]["allow"], "[]"},
		{"root scope", raw.Nodes[0]["scope"], "null"},
		{"root aliases", raw.Nodes[0]["aliases"], "[]"},
	} {
		if string(c.got) != c.want {
			t.Errorf("%s = %s, want %s", c.name, c.got, c.want)
		}
	}
}

func TestServer_FixtureHashes(t *testing.T) {
	s := mustServeCompany(t, openenv.Config{})
	code, body, _ := s.httpDo(t, "GET", "/fixtures", "", nil)
	if code != http.StatusOK {
		t.Fatalf("GET /fixtures: %d %s", code, body)
	}
	var list []openenv.FixtureInfo
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatal(err)
	}
	acme, err := fixture.Read(compositiontest.FixturesDir(t, company.World), company.AcmeID)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"main": acme.FileSHA256}
	for _, n := range acme.Nodes {
		want[n.Path] = n.FileSHA256
	}
	for _, f := range list {
		if f.ID == company.AcmeID {
			if !reflect.DeepEqual(f.FileSHA256, want) {
				t.Errorf("acme file_sha256 = %v, want %v", f.FileSHA256, want)
			}
			return
		}
	}
	t.Errorf("GET /fixtures does not list acme: %s", body)
}

// describer is a backend whose composition is fixed by the test.
type describer struct {
	*fakeBackend
	describe func() (*openenv.Composition, error)
}

func (d describer) Composition(context.Context) (*openenv.Composition, error) { return d.describe() }

func TestServer_CompositionErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		backend openenv.Backend
		status  int
		body    string
	}{
		{"ErrNotDescribed", newFake(t), http.StatusNotFound,
			`{"detail":"This server's backend does not describe its composition"}`},
		{"ErrDescribing", describer{newFake(t), func() (*openenv.Composition, error) { return nil, errors.New("schema does not apply") }},
			http.StatusInternalServerError, `{"detail":"Describing the composition failed: schema does not apply","code":"EXECUTION_ERROR"}`},
		{"ErrPanic", describer{newFake(t), func() (*openenv.Composition, error) { panic("boom") }},
			http.StatusInternalServerError, `{"detail":"internal error: Backend.Composition panicked: boom","code":"EXECUTION_ERROR"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := openenv.NewServer(tc.backend, openenv.Config{Logger: slog.New(slog.DiscardHandler)})
			ts := httptest.NewServer(srv.Handler())
			defer ts.Close()
			s := &testServer{Server: srv, ts: ts}
			code, body, _ := s.httpDo(t, "GET", "/composition", "", nil)
			if code != tc.status {
				t.Errorf("status = %d, want %d", code, tc.status)
			}
			jsonEq(t, body, tc.body)
		})
	}
}
