// Command crm serves the CRM world of docs/authoring.md over OpenEnv on :8000.
package main

import (
	"context"
	"errors"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/seahaven/seahaven/app"
	"github.com/seahaven/seahaven/docs/examples/crm"
	"github.com/seahaven/seahaven/openenv"
)

func main() {
	backend, err := app.New(crm.World, app.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer backend.Close()
	srv := openenv.NewServer(backend, openenv.Config{})
	hs := &http.Server{Addr: ":8000", Handler: srv.Handler()}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		srv.Shutdown(context.Background()) // closes every session first
		hs.Shutdown(context.Background())
	}()
	if err := hs.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}
