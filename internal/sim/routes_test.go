package sim

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aiperf-action/aiperf-action/internal/endpoint"
)

// Every endpoint type with a path of its own is answered by the simulator
// at that path (and at its streaming path), so a type added to
// endpoint.Types without a route here fails.
func TestRoutesCoverEndpointTypes(t *testing.T) {
	s := New(Config{})
	for _, ty := range endpoint.Types {
		if ty.Path == "" {
			continue // (template: --endpoint's path; raw: the URL as given)
		}
		for _, path := range []string{ty.Path, ty.StreamPath} {
			if path == "" {
				continue
			}
			r := httptest.NewRequest(http.MethodPost, strings.ReplaceAll(path, "{model}", "m"), nil)
			if _, pattern := s.mux.Handler(r); pattern == "" {
				t.Errorf("endpoint type %s: the simulator has no route for POST %s", ty.Name, path)
			}
		}
	}
}
