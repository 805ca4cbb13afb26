package web_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/seahaven/seahaven/web"
)

// Mount the UI beside a protocol handler, as `seahaven serve` does.
func ExampleHandler() {
	api := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "the protocol") })
	mux := http.NewServeMux()
	mux.Handle("/web/", web.Handler())
	mux.Handle("/web", web.Handler())
	mux.Handle("/", api)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	res, err := http.Get(srv.URL + "/web")
	if err != nil {
		panic(err)
	}
	res.Body.Close()
	fmt.Println(res.Request.URL.Path, res.StatusCode, res.Header.Get("Content-Type"))
	// Output: /web/ 200 text/html; charset=utf-8
}
