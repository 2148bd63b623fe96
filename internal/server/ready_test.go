package server

import (
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
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
