package report

import (
	"strings"
	"testing"

	"github.com/aiperf-action/aiperf-action/internal/metrics"
	"github.com/aiperf-action/aiperf-action/internal/result"
)

// The console's error table renders from run.json alone: each kind's
// count and its example message come back from the file.
func TestConsoleFromRunJSON(t *testing.T) {
	r := &result.Run{Schema: result.Schema, DurationS: 2, Metrics: map[string]metrics.Metric{},
		Counts: metrics.Counts{Requests: 5, OK: 2, Errors: 3, ErrorsByKind: map[string]int{"http_500": 2, "stream_truncated": 1},
			ErrorExamples: map[string]string{"http_500": "upstream boom", "stream_truncated": "the stream ended after 3 chunks"}}}
	b, err := result.Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	back, err := result.Parse(b, "run.json")
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	Console(&out, back)
	for _, want := range []string{"http_500", "upstream boom", "stream_truncated", "the stream ended after 3 chunks"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the console lacks %q:\n%s", want, out.String())
		}
	}
}
