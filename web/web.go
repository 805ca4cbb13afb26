package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"
)

// Prefix is the path the UI is served under.
const Prefix = "/web/"

//go:embed ui
var files embed.FS

// contentSecurityPolicy keeps the page to its own origin: its scripts,
// styles and connections (fetch and the /ws WebSocket) all stay on the
// server that served it.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// contentTypes fixes the types of the assets' extensions, so they do not
// depend on the host's MIME tables.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".svg":  "image/svg+xml",
}

// asset is one embedded file, read once.
type asset struct {
	body        []byte
	contentType string
	etag        string
}

// handler serves the embedded assets. It is immutable once built.
type handler struct {
	assets map[string]asset // by name relative to ui/, "index.html" for the page
}

// Handler returns the handler of the UI. It serves every asset under
// [Prefix] and redirects the bare /web to /web/, keeping the query. Only
// GET and HEAD are allowed; any other path is 404. Responses carry a strong ETag so revalidation costs a
// 304, and a Content-Security-Policy that keeps the page on its own origin.
// The handler is safe for concurrent use.
func Handler() http.Handler { return loadHandler() }

// loadHandler reads the embedded assets once.
var loadHandler = sync.OnceValue(func() *handler {
	h := &handler{assets: map[string]asset{}}
	err := fs.WalkDir(files, "ui", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		ct := contentTypes[path.Ext(p)]
		if ct == "" {
			ct = mime.TypeByExtension(path.Ext(p))
		}
		if ct == "" {
			ct = http.DetectContentType(b)
		}
		h.assets[strings.TrimPrefix(p, "ui/")] = asset{body: b, contentType: ct, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		return nil
	})
	if err != nil {
		// The files are compiled in; failing to read them is a broken build.
		panic(fmt.Sprintf("web: reading embedded assets: %v", err))
	}
	return h
})

// ServeHTTP serves one asset.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == strings.TrimSuffix(Prefix, "/") {
		target := Prefix
		if r.URL.RawQuery != "" {
			target += "?" + r.URL.RawQuery
		}
		http.Redirect(w, r, target, http.StatusMovedPermanently)
		return
	}
	name, ok := strings.CutPrefix(r.URL.Path, Prefix)
	if !ok {
		http.NotFound(w, r)
		return
	}
	if name == "" {
		name = "index.html"
	}
	a, ok := h.assets[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", a.contentType)
	hd.Set("ETag", a.etag)
	hd.Set("Cache-Control", "no-cache")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	if name == "index.html" {
		hd.Set("Content-Security-Policy", contentSecurityPolicy)
	}
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(a.body))
}
