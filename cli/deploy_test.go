package cli

// The deployment files (Dockerfile, docker-compose.yml, deploy/) cannot be
// run here, so these tests read them and check that they agree with the
// binary: every flag and environment variable they set exists in
// `seahaven serve -h`, every port matches the address the server listens
// on, and every probe names a route a real server answers without a token.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// repoRoot is the repository root, relative to this package.
const repoRoot = ".."

// serveSurface is what `seahaven serve -h` documents.
type serveSurface struct {
	flags map[string]bool // flag names, without dashes
	envs  map[string]bool // SEAHAVEN_* variables
}

var (
	helpFlagRE = regexp.MustCompile(`(?m)^\s+-([a-z][a-z0-9-]*)`)
	helpEnvRE  = regexp.MustCompile(`SEAHAVEN_[A-Z_]+`)
)

// mustServeSurface runs `seahaven serve -h` and `seahaven healthcheck -h`
// and collects the flags and environment variables they document.
func mustServeSurface(tb testing.TB) serveSurface {
	tb.Helper()
	surf := serveSurface{flags: map[string]bool{}, envs: map[string]bool{}}
	for _, cmd := range []string{"serve", "healthcheck"} {
		var out bytes.Buffer
		m := exampleMain()
		m.Stdout, m.Stderr = &out, &out
		if err := m.Run(context.Background(), []string{cmd, "-h"}); exitCode(err) != 0 {
			tb.Fatalf("seahaven %s -h: %v", cmd, err)
		}
		if cmd == "serve" {
			for _, sm := range helpFlagRE.FindAllStringSubmatch(out.String(), -1) {
				surf.flags[sm[1]] = true
			}
		}
		for _, e := range helpEnvRE.FindAllString(out.String(), -1) {
			surf.envs[e] = true
		}
	}
	if len(surf.flags) < 10 || !surf.envs["SEAHAVEN_TOKEN"] {
		tb.Fatalf("serve -h documents too little: flags %v, env %v", surf.flags, surf.envs)
	}
	return surf
}

// checkServeArgs checks a serve command line: "serve" then flags that
// exist. It returns the flags' values.
func (surf serveSurface) checkServeArgs(tb testing.TB, where string, args []string) map[string]string {
	tb.Helper()
	if len(args) == 0 || args[0] != "serve" {
		tb.Fatalf("%s: command %q does not start with serve", where, args)
	}
	vals := map[string]string{}
	for i := 1; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			tb.Errorf("%s: argument %q is not a flag", where, a)
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !surf.flags[name] {
			tb.Errorf("%s: flag --%s is not a serve flag", where, name)
			continue
		}
		if !hasVal && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") && name != "production" && name != "force" && name != "pprof" {
			i++
			val = args[i]
		}
		vals[name] = val
	}
	return vals
}

// checkEnv checks that every variable set is one serve documents.
func (surf serveSurface) checkEnv(tb testing.TB, where string, env map[string]string) {
	tb.Helper()
	for k := range env {
		if strings.HasPrefix(k, "SEAHAVEN_") && !surf.envs[k] {
			tb.Errorf("%s: %s is not documented by seahaven serve -h", where, k)
		}
	}
}

// portOf returns the port of a listen address such as ":8000".
func portOf(tb testing.TB, where, addr string) int {
	tb.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		tb.Fatalf("%s: address %q: %v", where, addr, err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		tb.Fatalf("%s: port of %q: %v", where, addr, err)
	}
	return n
}

// duration parses a Go duration, failing the test on error.
func duration(tb testing.TB, where, s string) time.Duration {
	tb.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		tb.Fatalf("%s: %v", where, err)
	}
	return d
}

// liveServer is `seahaven serve` running in the test on loopback ports.
type liveServer struct {
	base, agent string
	token       string
}

// mustServeLive runs serve with a token and an agent listener until cleanup.
func mustServeLive(tb testing.TB) *liveServer {
	tb.Helper()
	const token = "deploy-test-token"
	addr, agent := serveWithAgent(tb, "--token", token, "--max-sessions", "8")
	return &liveServer{token: token, base: "http://" + addr, agent: "http://" + agent}
}

// serveWithAgent runs serve in process with an agent listener and args
// until cleanup, and returns the two listeners' addresses.
func serveWithAgent(tb testing.TB, args ...string) (addr, agent string) {
	tb.Helper()
	var stderr bytes.Buffer
	m := exampleMain()
	m.Stdout, m.Stderr = io.Discard, &stderr
	ctx, cancel := context.WithCancel(context.Background())
	addrc, agentc := make(chan string, 1), make(chan string, 1)
	errc := make(chan error, 1)
	cmd := &ServeCommand{m: m, Listening: func(a string) { addrc <- a }, AgentListening: func(a string) { agentc <- a }}
	go func() {
		errc <- cmd.Run(ctx, append([]string{"--addr", "127.0.0.1:0", "--agent-addr", "127.0.0.1:0", "--instances", tb.TempDir(), "--log-level", "error"}, args...))
	}()
	for addr == "" || agent == "" {
		select {
		case addr = <-addrc:
		case agent = <-agentc:
		case err := <-errc:
			cancel()
			tb.Fatalf("serve ended before listening: %v\n%s", err, stderr.String())
		}
	}
	tb.Cleanup(func() {
		cancel()
		if err := <-errc; err != nil {
			tb.Errorf("serve: %v\n%s", err, stderr.String())
		}
	})
	return addr, agent
}

// get makes a request and returns the status and body.
func (s *liveServer) get(tb testing.TB, method, url, body string, withToken bool) (int, string) {
	tb.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if withToken {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// dockerfile is a Dockerfile read as instructions per stage.
type dockerfile struct {
	stages [][]dockerInstr
}

// dockerInstr is one instruction: its keyword (upper case) and the rest.
type dockerInstr struct {
	op, args string
}

// noWorldNamed fails t when a serve command names a world or a fixtures
// directory: the image serves its binary's own default world from the
// fixtures built into it, so the same files run a world author's image.
func noWorldNamed(t *testing.T, where string, flags map[string]string) {
	t.Helper()
	for _, f := range []string{"world", "fixtures"} {
		if v, ok := flags[f]; ok {
			t.Errorf("%s sets --%s=%s: it would serve only that, not the image's own world", where, f, v)
		}
	}
}

// readDockerfile parses the instructions of a Dockerfile, joining
// continuation lines and dropping comments.
func readDockerfile(tb testing.TB, p string) dockerfile {
	tb.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		tb.Fatal(err)
	}
	var df dockerfile
	var cur strings.Builder
	flush := func() {
		line := strings.TrimSpace(cur.String())
		cur.Reset()
		if line == "" {
			return
		}
		op, args, _ := strings.Cut(line, " ")
		in := dockerInstr{strings.ToUpper(op), strings.TrimSpace(args)}
		if in.op == "FROM" {
			df.stages = append(df.stages, nil)
		}
		if len(df.stages) == 0 {
			tb.Fatalf("%s: %s before the first FROM", p, in.op)
		}
		df.stages[len(df.stages)-1] = append(df.stages[len(df.stages)-1], in)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") {
			continue
		}
		if cont, ok := strings.CutSuffix(line, `\`); ok {
			cur.WriteString(cont + " ")
			continue
		}
		cur.WriteString(line)
		flush()
	}
	flush()
	return df
}

// find returns the instructions of a stage with keyword op.
func find(stage []dockerInstr, op string) []dockerInstr {
	var out []dockerInstr
	for _, in := range stage {
		if in.op == op {
			out = append(out, in)
		}
	}
	return out
}

// execForm decodes an instruction's JSON (exec form) argument list.
func execForm(tb testing.TB, in dockerInstr) []string {
	tb.Helper()
	var args []string
	if err := json.Unmarshal([]byte(in.args), &args); err != nil {
		tb.Fatalf("%s %s: not the exec form: %v", in.op, in.args, err)
	}
	return args
}

func TestDockerfile(t *testing.T) {
	surf := mustServeSurface(t)
	df := readDockerfile(t, filepath.Join(repoRoot, "Dockerfile"))
	if len(df.stages) != 2 {
		t.Fatalf("%d stages, want 2 (build, final)", len(df.stages))
	}
	build, final := df.stages[0], df.stages[1]

	t.Run("BuildStage", func(t *testing.T) {
		if from := build[0].args; !regexp.MustCompile(`^golang:1\.26(\.\d+)?\S* AS build$`).MatchString(from) {
			t.Errorf("build stage FROM %q, want golang:1.26 AS build", from)
		}
		// The command built is a build argument, ./cmd/seahaven by default,
		// so a world author's module builds its own the same way.
		if args := find(build, "ARG"); len(args) != 1 || args[0].args != "CMD=./cmd/seahaven" {
			t.Errorf("build stage ARG %v, want CMD=./cmd/seahaven", args)
		}
		var built bool
		for _, in := range find(build, "RUN") {
			if strings.Contains(in.args, "go build") {
				built = true
				if !strings.Contains(in.args, "CGO_ENABLED=0") || !strings.Contains(in.args, `"$CMD"`) {
					t.Errorf("go build without CGO_ENABLED=0 or not of the CMD argument: %s", in.args)
				}
			}
		}
		if !built {
			t.Error("no RUN go build in the build stage")
		}
	})

	env := map[string]string{}
	for _, in := range find(final, "ENV") {
		for _, kv := range strings.Fields(in.args) {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				t.Fatalf("ENV %q: use KEY=value", in.args)
			}
			env[k] = v
		}
	}

	t.Run("FinalStage", func(t *testing.T) {
		from := final[0].args
		if strings.Contains(from, "golang") || !strings.Contains(from, "distroless") {
			t.Errorf("final stage FROM %q, want a distroless image", from)
		}
		users := find(final, "USER")
		if len(users) == 0 {
			t.Fatal("no USER in the final stage")
		}
		user := users[len(users)-1].args
		if uid, _, _ := strings.Cut(user, ":"); uid == "root" || uid == "0" || uid == "" {
			t.Errorf("USER %q is root", user)
		}
		hc := find(final, "HEALTHCHECK")
		if len(hc) != 1 {
			t.Fatalf("%d HEALTHCHECK instructions, want 1", len(hc))
		}
		_, cmd, ok := strings.Cut(hc[0].args, "CMD ")
		if !ok {
			t.Fatalf("HEALTHCHECK %q has no CMD", hc[0].args)
		}
		if args := execForm(t, dockerInstr{"CMD", cmd}); len(args) < 2 || path.Base(args[0]) != "seahaven" || args[1] != "healthcheck" {
			t.Errorf("HEALTHCHECK runs %q, want seahaven healthcheck", args)
		}
		surf.checkEnv(t, "Dockerfile ENV", env)
		expose := find(final, "EXPOSE")
		if len(expose) != 1 {
			t.Fatalf("%d EXPOSE, want 1", len(expose))
		}
		if want := strconv.Itoa(portOf(t, "SEAHAVEN_ADDR", env["SEAHAVEN_ADDR"])); expose[0].args != want {
			t.Errorf("EXPOSE %s, but the server listens on %s", expose[0].args, env["SEAHAVEN_ADDR"])
		}
	})

	t.Run("CommandAndWorld", func(t *testing.T) {
		entry := find(final, "ENTRYPOINT")
		cmds := find(final, "CMD")
		if len(entry) != 1 || len(cmds) != 1 {
			t.Fatalf("want one ENTRYPOINT and one CMD, got %d and %d", len(entry), len(cmds))
		}
		if e := execForm(t, entry[0]); len(e) != 1 || path.Base(e[0]) != "seahaven" {
			t.Errorf("ENTRYPOINT %q", e)
		}
		flags := surf.checkServeArgs(t, "Dockerfile CMD", execForm(t, cmds[0]))
		noWorldNamed(t, "Dockerfile CMD", flags)
		// The directories the server writes are the nonroot user's: the
		// instances, and the temp directory, where embedded fixtures are
		// copied on start.
		for _, v := range []string{"SEAHAVEN_INSTANCES", "TMPDIR"} {
			var owned bool
			for _, in := range find(final, "COPY") {
				f := strings.Fields(in.args)
				if slices.Contains(f, "--chown=65532:65532") && strings.HasPrefix(env[v], f[len(f)-1]+"/") {
					owned = true
				}
			}
			if !owned {
				t.Errorf("%s=%q is not in a directory copied with --chown to the USER", v, env[v])
			}
		}
	})
}

func TestDockerignore(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			patterns = append(patterns, l)
		}
	}
	ignored := func(p string) bool {
		parts := strings.Split(p, "/")
		for _, pat := range patterns {
			for i := range parts {
				prefix := strings.Join(parts[:i+1], "/")
				if ok, _ := path.Match(pat, prefix); ok {
					return true
				}
				if rest, ok := strings.CutPrefix(pat, "**/"); ok {
					if ok, _ := path.Match(rest, parts[i]); ok {
						return true
					}
				}
			}
		}
		return false
	}
	for _, tt := range []struct {
		path string
		want bool // ignored
	}{
		{"go.mod", false},
		{"go.sum", false},
		{"cmd/seahaven/main.go", false},
		{"openenv/openapi.json", false},
		{"schemas/action.json", false},
		{"web/ui/index.html", false},
		{"examples/worlds/company/fixtures/acme/state.sqlite", false},
		{".git/HEAD", true},
		{"openenv.test", true},
		{"composition/x.test", true},
		{"seahaven", true},
	} {
		if got := ignored(tt.path); got != tt.want {
			t.Errorf("%s ignored = %v, want %v", tt.path, got, tt.want)
		}
	}
}

// composeFile is the part of docker-compose.yml the tests read.
type composeFile struct {
	Services map[string]struct {
		Build       any               `yaml:"build"`
		Image       string            `yaml:"image"`
		Command     []string          `yaml:"command"`
		Environment map[string]string `yaml:"environment"`
		Expose      []string          `yaml:"expose"`
		Ports       []string          `yaml:"ports"`
		Volumes     []struct {
			Type     string `yaml:"type"`
			Source   string `yaml:"source"`
			Target   string `yaml:"target"`
			ReadOnly bool   `yaml:"read_only"`
		} `yaml:"volumes"`
		Deploy struct {
			Replicas int `yaml:"replicas"`
		} `yaml:"deploy"`
		StopGracePeriod string `yaml:"stop_grace_period"`
	} `yaml:"services"`
}

func TestCompose(t *testing.T) {
	surf := mustServeSurface(t)
	b, err := os.ReadFile(filepath.Join(repoRoot, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var cf composeFile
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(false)
	if err := dec.Decode(&cf); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	srv, ok := cf.Services["seahaven"]
	if !ok {
		t.Fatalf("no seahaven service in %v", cf.Services)
	}
	flags := surf.checkServeArgs(t, "compose command", srv.Command)
	surf.checkEnv(t, "compose environment", srv.Environment)
	if srv.Deploy.Replicas < 2 {
		t.Errorf("deploy.replicas %d, want several", srv.Deploy.Replicas)
	}
	if srv.Build == nil {
		t.Error("the seahaven service does not build the Dockerfile")
	}
	if !strings.HasPrefix(srv.Environment["SEAHAVEN_TOKEN"], "${SEAHAVEN_TOKEN:?") {
		t.Errorf("SEAHAVEN_TOKEN = %q, want it required from the environment", srv.Environment["SEAHAVEN_TOKEN"])
	}
	port := portOf(t, "SEAHAVEN_ADDR", srv.Environment["SEAHAVEN_ADDR"])
	if !slices.Contains(srv.Expose, strconv.Itoa(port)) {
		t.Errorf("expose %v, but the server listens on %d", srv.Expose, port)
	}
	if grace, shutdown := duration(t, "stop_grace_period", srv.StopGracePeriod), duration(t, "SEAHAVEN_SHUTDOWN_TIMEOUT", srv.Environment["SEAHAVEN_SHUTDOWN_TIMEOUT"]); grace <= shutdown {
		t.Errorf("stop_grace_period %s is not longer than the shutdown timeout %s", grace, shutdown)
	}
	noWorldNamed(t, "the compose command", flags)
	shared := false
	for _, v := range srv.Volumes {
		shared = shared || v.Type == "volume" && v.Target == srv.Environment["SEAHAVEN_CHECKPOINTS"]
	}
	if !shared {
		t.Errorf("the replicas share no checkpoint volume at SEAHAVEN_CHECKPOINTS (%q)", srv.Environment["SEAHAVEN_CHECKPOINTS"])
	}

	proxy, ok := cf.Services["proxy"]
	if !ok {
		t.Fatal("no proxy service")
	}
	if len(proxy.Ports) != 1 {
		t.Fatalf("proxy ports %v", proxy.Ports)
	}
	if _, inner, _ := strings.Cut(proxy.Ports[0], ":"); inner == "" {
		t.Errorf("proxy port %q publishes no container port", proxy.Ports[0])
	}
	var cfgPath string
	for _, v := range proxy.Volumes {
		if strings.HasSuffix(v.Target, "haproxy.cfg") {
			cfgPath = filepath.Join(repoRoot, v.Source)
		}
	}
	cfg, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatalf("the proxy's haproxy.cfg: %v", err)
	}
	text := string(cfg)
	_, published, _ := strings.Cut(proxy.Ports[0], ":")
	for _, want := range []string{
		"bind :" + published,                               // the published port
		"balance roundrobin",                               // new sessions spread
		"balance hdr(X-Seahaven-Session)",                  // HTTP sessions by their header
		"hash-type consistent",                             // scaling moves few sessions
		"stick store-response res.hdr(Mcp-Session-Id)",     // MCP sessions where they were made
		"stick match req.hdr(Mcp-Session-Id)",              //
		"option httpchk GET /accepting",                    // new sessions to replicas taking them
		"option httpchk GET /ready",                        // live sessions while their replica serves
		" seahaven:" + strconv.Itoa(port) + " ",            // the service and its port
		"timeout tunnel",                                   // WebSockets outlive a request
		"timeout server-fin",                               // a vanished replica's tunnels end with their clients
		"timeout check 3s",                                 // a busy replica's late answer is not a failed check
		"timeout server " + strconv.Itoa(60) + "s",         // longer than a step
		"resolvers docker",                                 // replicas found by DNS
		"nameserver dns 127.0.0.11:53",                     // Docker's DNS
		"server-template seahaven 1-10 seahaven:" + "8000", // the replicas
	} {
		if !strings.Contains(text, want) {
			t.Errorf("haproxy.cfg lacks %q", want)
		}
	}
	if step := duration(t, "SEAHAVEN_STEP_TIMEOUT", srv.Environment["SEAHAVEN_STEP_TIMEOUT"]); step >= 60*time.Second {
		t.Errorf("the step timeout %s is not shorter than HAProxy's timeout server", step)
	}
}

// k8sObject is one Kubernetes manifest, decoded loosely.
type k8sObject struct {
	APIVersion string         `yaml:"apiVersion"`
	Kind       string         `yaml:"kind"`
	Metadata   map[string]any `yaml:"metadata"`
	Spec       yaml.Node      `yaml:"spec"`
	Resources  []string       `yaml:"resources"` // a Kustomization's
	file       string
}

// deploymentSpec is the part of a Deployment the tests read.
type deploymentSpec struct {
	Selector struct {
		MatchLabels map[string]string `yaml:"matchLabels"`
	} `yaml:"selector"`
	Template struct {
		Metadata struct {
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"metadata"`
		Spec struct {
			TerminationGracePeriodSeconds int `yaml:"terminationGracePeriodSeconds"`
			SecurityContext               struct {
				RunAsNonRoot *bool `yaml:"runAsNonRoot"`
				RunAsUser    int   `yaml:"runAsUser"`
			} `yaml:"securityContext"`
			Containers []struct {
				Image string   `yaml:"image"`
				Args  []string `yaml:"args"`
				Env   []struct {
					Name      string `yaml:"name"`
					Value     string `yaml:"value"`
					ValueFrom *struct {
						SecretKeyRef *struct {
							Name string `yaml:"name"`
							Key  string `yaml:"key"`
						} `yaml:"secretKeyRef"`
					} `yaml:"valueFrom"`
				} `yaml:"env"`
				Ports []struct {
					Name          string `yaml:"name"`
					ContainerPort int    `yaml:"containerPort"`
				} `yaml:"ports"`
				ReadinessProbe *probeSpec `yaml:"readinessProbe"`
				LivenessProbe  *probeSpec `yaml:"livenessProbe"`
				StartupProbe   *probeSpec `yaml:"startupProbe"`
				Lifecycle      struct {
					PreStop struct {
						Sleep struct {
							Seconds int `yaml:"seconds"`
						} `yaml:"sleep"`
					} `yaml:"preStop"`
				} `yaml:"lifecycle"`
				Resources struct {
					Requests map[string]string `yaml:"requests"`
					Limits   map[string]string `yaml:"limits"`
				} `yaml:"resources"`
				SecurityContext struct {
					AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
					ReadOnlyRootFilesystem   *bool `yaml:"readOnlyRootFilesystem"`
					Capabilities             struct {
						Drop []string `yaml:"drop"`
					} `yaml:"capabilities"`
				} `yaml:"securityContext"`
				VolumeMounts []struct {
					Name      string `yaml:"name"`
					MountPath string `yaml:"mountPath"`
				} `yaml:"volumeMounts"`
			} `yaml:"containers"`
			Volumes []struct {
				Name     string    `yaml:"name"`
				EmptyDir *struct{} `yaml:"emptyDir"`
			} `yaml:"volumes"`
		} `yaml:"spec"`
	} `yaml:"template"`
}

// probeSpec is a container probe.
type probeSpec struct {
	HTTPGet struct {
		Path string `yaml:"path"`
		Port string `yaml:"port"`
	} `yaml:"httpGet"`
	TimeoutSeconds int `yaml:"timeoutSeconds"` // 0 for Kubernetes's default, 1
}

// readManifests decodes every document of every YAML file in dir.
func readManifests(tb testing.TB, dir string) []k8sObject {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("no manifests in %s (%v)", dir, err)
	}
	var objs []k8sObject
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		for {
			var o k8sObject
			err := dec.Decode(&o)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				tb.Fatalf("%s: %v", f, err)
			}
			o.file = filepath.Base(f)
			if o.APIVersion == "" || o.Kind == "" {
				tb.Errorf("%s: a document without apiVersion or kind", f)
			}
			objs = append(objs, o)
		}
	}
	return objs
}

func TestKubernetes(t *testing.T) {
	surf := mustServeSurface(t)
	objs := readManifests(t, filepath.Join(repoRoot, "deploy", "kubernetes"))
	byKind := map[string][]k8sObject{}
	for _, o := range objs {
		byKind[o.Kind] = append(byKind[o.Kind], o)
	}
	for kind, api := range map[string]string{
		"Deployment": "apps/v1", "Service": "v1", "HorizontalPodAutoscaler": "autoscaling/v2",
		"PodDisruptionBudget": "policy/v1", "Kustomization": "kustomize.config.k8s.io/v1beta1",
		"Ingress": "networking.k8s.io/v1", "PersistentVolumeClaim": "v1",
	} {
		if len(byKind[kind]) == 0 {
			t.Errorf("no %s", kind)
		}
		for _, o := range byKind[kind] {
			if o.APIVersion != api {
				t.Errorf("%s %s: apiVersion %s, want %s", o.file, kind, o.APIVersion, api)
			}
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	t.Run("Kustomization", func(t *testing.T) {
		k := byKind["Kustomization"][0]
		var files []string
		for _, o := range objs {
			if o.Kind != "Kustomization" && !slices.Contains(files, o.file) {
				files = append(files, o.file)
			}
		}
		slices.Sort(files)
		res := slices.Clone(k.Resources)
		slices.Sort(res)
		if !slices.Equal(res, files) {
			t.Errorf("kustomization resources %v, want every manifest %v", res, files)
		}
	})

	dep := byKind["Deployment"][0]
	var spec deploymentSpec
	if err := dep.Spec.Decode(&spec); err != nil {
		t.Fatalf("Deployment spec: %v", err)
	}
	if len(spec.Template.Spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(spec.Template.Spec.Containers))
	}
	c := spec.Template.Spec.Containers[0]
	flags := surf.checkServeArgs(t, "Deployment args", c.Args)
	noWorldNamed(t, "the Deployment's args", flags)
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
		if e.Name == "SEAHAVEN_TOKEN" && (e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil) {
			t.Error("SEAHAVEN_TOKEN is not taken from a Secret")
		}
	}
	surf.checkEnv(t, "Deployment env", env)
	ports := map[string]int{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	live := mustServeLive(t)

	t.Run("Ports", func(t *testing.T) {
		if got, want := ports["http"], portOf(t, "SEAHAVEN_ADDR", env["SEAHAVEN_ADDR"]); got != want {
			t.Errorf("containerPort http %d, but the server listens on %d", got, want)
		}
		if got, want := ports["agent"], portOf(t, "--agent-addr", flags["agent-addr"]); got != want {
			t.Errorf("containerPort agent %d, but --agent-addr is %s", got, flags["agent-addr"])
		}
		if a := spec.Template.Metadata.Annotations; a["prometheus.io/port"] != strconv.Itoa(ports["http"]) {
			t.Errorf("prometheus.io/port %q, want the http port %d", a["prometheus.io/port"], ports["http"])
		}
		for _, svc := range byKind["Service"] {
			var s struct {
				Selector        map[string]string `yaml:"selector"`
				SessionAffinity string            `yaml:"sessionAffinity"`
				Ports           []struct {
					Name       string `yaml:"name"`
					TargetPort string `yaml:"targetPort"`
				} `yaml:"ports"`
			}
			if err := svc.Spec.Decode(&s); err != nil {
				t.Fatal(err)
			}
			if s.SessionAffinity != "" && s.SessionAffinity != "None" {
				t.Errorf("Service %v: sessionAffinity %q: one client's sessions would all land on one pod", svc.Metadata["name"], s.SessionAffinity)
			}
			for _, p := range s.Ports {
				if _, ok := ports[p.TargetPort]; !ok {
					t.Errorf("Service %v: targetPort %q names no container port", svc.Metadata["name"], p.TargetPort)
				}
			}
			for k, v := range s.Selector {
				if spec.Template.Metadata.Labels[k] != v {
					t.Errorf("Service %v selects %s=%s, not a pod label", svc.Metadata["name"], k, v)
				}
			}
		}
	})

	t.Run("Probes", func(t *testing.T) {
		for _, p := range []struct {
			name  string
			probe *probeSpec
			want  string // the route
		}{
			{"readiness", c.ReadinessProbe, "/ready"},
			{"liveness", c.LivenessProbe, "/health"},
			{"startup", c.StartupProbe, "/health"},
		} {
			if p.probe == nil {
				t.Errorf("no %s probe", p.name)
				continue
			}
			// A busy pod answers late but serves: a probe that fails it
			// after Kubernetes's default second would take it out of the
			// endpoints (readiness) or restart it (liveness) under load.
			if p.name != "startup" && p.probe.TimeoutSeconds < 3 {
				t.Errorf("the %s probe waits %ds for an answer (0: Kubernetes's default of 1), want at least 3", p.name, p.probe.TimeoutSeconds)
			}
			g := p.probe.HTTPGet
			if g.Path != p.want || ports[g.Port] == 0 || g.Port != "http" {
				t.Errorf("%s probe GET %s on port %q, want %s on http", p.name, g.Path, g.Port, p.want)
			}
			// A probe sends no token; the route must answer anyway.
			if code, body := live.get(t, "GET", live.base+g.Path, "", false); code != http.StatusOK {
				t.Errorf("%s probe %s: a server answers %d %s", p.name, g.Path, code, body)
			}
		}
		metricsPath := spec.Template.Metadata.Annotations["prometheus.io/path"]
		if code, _ := live.get(t, "GET", live.base+metricsPath, "", true); code != http.StatusOK {
			t.Errorf("GET %s with the token: %d", metricsPath, code)
		}
		if code, _ := live.get(t, "GET", live.base+metricsPath, "", false); code != http.StatusUnauthorized {
			t.Errorf("GET %s without the token: %d, want 401", metricsPath, code)
		}
	})

	t.Run("AgentListener", func(t *testing.T) {
		if code, body := live.get(t, "POST", live.agent+"/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, true); code != http.StatusOK || !strings.Contains(body, `"tools"`) {
			t.Errorf("POST /mcp on the agent listener: %d %.200s", code, body)
		}
		for _, p := range []string{"/ws", "/state", "/metrics", "/sessions"} {
			if code, _ := live.get(t, "GET", live.agent+p, "", true); code != http.StatusNotFound {
				t.Errorf("GET %s on the agent listener: %d, want 404", p, code)
			}
		}
	})

	t.Run("Termination", func(t *testing.T) {
		grace := time.Duration(spec.Template.Spec.TerminationGracePeriodSeconds) * time.Second
		step := duration(t, "SEAHAVEN_STEP_TIMEOUT", env["SEAHAVEN_STEP_TIMEOUT"])
		shutdown := duration(t, "SEAHAVEN_SHUTDOWN_TIMEOUT", env["SEAHAVEN_SHUTDOWN_TIMEOUT"])
		preStop := time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
		if preStop <= 0 {
			t.Error("no preStop sleep")
		}
		if grace <= step || grace <= preStop+shutdown {
			t.Errorf("terminationGracePeriodSeconds %s is not longer than the step timeout %s and preStop %s + shutdown %s",
				grace, step, preStop, shutdown)
		}
	})

	t.Run("Security", func(t *testing.T) {
		ps := spec.Template.Spec.SecurityContext
		if ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot || ps.RunAsUser == 0 {
			t.Errorf("pod securityContext runAsNonRoot %v runAsUser %d", ps.RunAsNonRoot, ps.RunAsUser)
		}
		sc := c.SecurityContext
		if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			t.Error("the root filesystem is writable")
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Error("privilege escalation is allowed")
		}
		if !slices.Contains(sc.Capabilities.Drop, "ALL") {
			t.Errorf("capabilities drop %v, want ALL", sc.Capabilities.Drop)
		}
		if c.Resources.Requests["cpu"] == "" || c.Resources.Requests["memory"] == "" || c.Resources.Limits["memory"] == "" {
			t.Errorf("resources %+v: want cpu and memory requests and a memory limit", c.Resources)
		}
		// With a read-only root, every directory the server writes is an emptyDir.
		emptyDirs := map[string]bool{}
		for _, v := range spec.Template.Spec.Volumes {
			if v.EmptyDir != nil {
				emptyDirs[v.Name] = true
			}
		}
		// TMPDIR, where embedded fixtures are copied, too: the image's
		// would be on the read-only root.
		if env["TMPDIR"] == "" {
			t.Error("TMPDIR is not set to a writable volume")
		}
		for _, dir := range []string{env["SEAHAVEN_INSTANCES"], env["TMPDIR"]} {
			var mounted bool
			for _, m := range c.VolumeMounts {
				if m.MountPath == dir && emptyDirs[m.Name] {
					mounted = true
				}
			}
			if !mounted {
				t.Errorf("%s is not an emptyDir mount", dir)
			}
		}
	})

	t.Run("HPA", func(t *testing.T) {
		var h struct {
			ScaleTargetRef struct {
				Kind string `yaml:"kind"`
				Name string `yaml:"name"`
			} `yaml:"scaleTargetRef"`
			MinReplicas int `yaml:"minReplicas"`
			MaxReplicas int `yaml:"maxReplicas"`
			Metrics     []struct {
				Type string `yaml:"type"`
				Pods struct {
					Metric struct {
						Name string `yaml:"name"`
					} `yaml:"metric"`
					Target struct {
						Type         string `yaml:"type"`
						AverageValue string `yaml:"averageValue"`
					} `yaml:"target"`
				} `yaml:"pods"`
			} `yaml:"metrics"`
		}
		if err := byKind["HorizontalPodAutoscaler"][0].Spec.Decode(&h); err != nil {
			t.Fatal(err)
		}
		if h.ScaleTargetRef.Kind != "Deployment" || h.ScaleTargetRef.Name != dep.Metadata["name"] {
			t.Errorf("scaleTargetRef %+v, want the Deployment %v", h.ScaleTargetRef, dep.Metadata["name"])
		}
		if len(h.Metrics) != 1 || h.Metrics[0].Type != "Pods" || h.Metrics[0].Pods.Target.Type != "AverageValue" {
			t.Fatalf("metrics %+v, want one Pods metric with an AverageValue target", h.Metrics)
		}
		name := h.Metrics[0].Pods.Metric.Name
		_, exposition := live.get(t, "GET", live.base+"/metrics", "", true)
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `\{`).MatchString(exposition) {
			t.Errorf("the HPA scales on %s, which /metrics does not expose", name)
		}
		target, err := strconv.Atoi(h.Metrics[0].Pods.Target.AverageValue)
		max, err2 := strconv.Atoi(env["SEAHAVEN_MAX_SESSIONS"])
		if err != nil || err2 != nil || target <= 0 || target >= max {
			t.Errorf("target %q sessions per pod, want below SEAHAVEN_MAX_SESSIONS %q", h.Metrics[0].Pods.Target.AverageValue, env["SEAHAVEN_MAX_SESSIONS"])
		}
		if h.MinReplicas < 2 || h.MaxReplicas <= h.MinReplicas {
			t.Errorf("replicas %d..%d", h.MinReplicas, h.MaxReplicas)
		}
	})

	t.Run("Ingress", func(t *testing.T) {
		ing := byKind["Ingress"][0]
		if got := ing.Metadata["annotations"]; !strings.Contains(fmt.Sprint(got), "upstream-hash-by:$http_x_seahaven_session") {
			t.Errorf("the Ingress does not hash on X-Seahaven-Session: %v", got)
		}
		var sp struct {
			Rules []struct {
				HTTP struct {
					Paths []struct {
						Backend struct {
							Service struct {
								Name string `yaml:"name"`
								Port struct {
									Name string `yaml:"name"`
								} `yaml:"port"`
							} `yaml:"service"`
						} `yaml:"backend"`
					} `yaml:"paths"`
				} `yaml:"http"`
			} `yaml:"rules"`
		}
		if err := ing.Spec.Decode(&sp); err != nil || len(sp.Rules) == 0 || len(sp.Rules[0].HTTP.Paths) == 0 {
			t.Fatalf("the Ingress has no backend (%v)", err)
		}
		b := sp.Rules[0].HTTP.Paths[0].Backend.Service
		found := false
		for _, svc := range byKind["Service"] {
			found = found || svc.Metadata["name"] == b.Name
		}
		if !found || b.Port.Name != "http" {
			t.Errorf("the Ingress's backend %s:%s is not the http port of a Service", b.Name, b.Port.Name)
		}
	})
	t.Run("CheckpointVolume", func(t *testing.T) {
		var claim struct {
			AccessModes []string `yaml:"accessModes"`
		}
		pvc := byKind["PersistentVolumeClaim"][0]
		if err := pvc.Spec.Decode(&claim); err != nil || !slices.Contains(claim.AccessModes, "ReadWriteMany") {
			t.Errorf("the checkpoint claim is not ReadWriteMany: %v (%v)", claim.AccessModes, err)
		}
		dj, _ := yaml.Marshal(dep.Spec)
		if !strings.Contains(string(dj), "claimName: "+fmt.Sprint(pvc.Metadata["name"])) || !strings.Contains(string(dj), "/var/lib/seahaven/checkpoints") {
			t.Error("the pods do not mount the checkpoint claim at SEAHAVEN_CHECKPOINTS")
		}
	})

	t.Run("PDB", func(t *testing.T) {
		var p struct {
			MaxUnavailable any `yaml:"maxUnavailable"`
			MinAvailable   any `yaml:"minAvailable"`
			Selector       struct {
				MatchLabels map[string]string `yaml:"matchLabels"`
			} `yaml:"selector"`
		}
		if err := byKind["PodDisruptionBudget"][0].Spec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		if p.MaxUnavailable == nil && p.MinAvailable == nil {
			t.Error("the PodDisruptionBudget sets neither maxUnavailable nor minAvailable")
		}
		if len(p.Selector.MatchLabels) == 0 {
			t.Error("the PodDisruptionBudget selects nothing")
		}
		for k, v := range p.Selector.MatchLabels {
			if spec.Template.Metadata.Labels[k] != v || spec.Selector.MatchLabels[k] != v {
				t.Errorf("the PodDisruptionBudget selects %s=%s, not the Deployment's pods", k, v)
			}
		}
	})

	t.Run("SameUserAsImage", func(t *testing.T) {
		df := readDockerfile(t, filepath.Join(repoRoot, "Dockerfile"))
		users := find(df.stages[len(df.stages)-1], "USER")
		uid, _, _ := strings.Cut(users[len(users)-1].args, ":")
		if uid != strconv.Itoa(spec.Template.Spec.SecurityContext.RunAsUser) {
			t.Errorf("runAsUser %d, but the image's USER is %s", spec.Template.Spec.SecurityContext.RunAsUser, uid)
		}
	})
}

func TestReadmeConfiguration(t *testing.T) {
	surf := mustServeSurface(t)
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Configuration\n")
	if !ok {
		t.Fatal("README.md has no Configuration section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	for name := range surf.flags {
		if !strings.Contains(section, "| `--"+name+"` |") {
			t.Errorf("README Configuration does not list --%s", name)
		}
	}
	for name := range surf.envs {
		if name != "SEAHAVEN_HEALTHCHECK_URL" && !strings.Contains(section, "`"+name+"`") {
			t.Errorf("README Configuration does not list %s", name)
		}
	}
}
