package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
)

// httpReady serves 200 once the file exists, 503 before.
func httpReady(t *testing.T, file string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := os.Stat(file); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// A server without /health (404) is ready when /v1/models answers; one
// whose /health says 503 is waited for whatever /v1/models says.
func TestWaitReadyFallsBackOnlyPastA404(t *testing.T) {
	t.Parallel()
	mk := func(health int) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/health" {
				w.WriteHeader(health)
			}
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	u := mk(http.StatusNotFound)
	got, err := WaitReady(context.Background(), []string{u + "/health", u + "/v1/models"}, 5*time.Second)
	if err != nil || got != u+"/v1/models" {
		t.Fatalf("no /health: %q, %v", got, err)
	}
	u = mk(http.StatusServiceUnavailable)
	if _, err := WaitReady(context.Background(), []string{u + "/health", u + "/v1/models"}, 500*time.Millisecond); err == nil || !strings.Contains(err.Error(), "not ready") {
		t.Fatalf("/health 503: %v", err)
	}
}
