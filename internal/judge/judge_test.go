package judge

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/aiperf-action/aiperf-action/internal/metrics"
	"github.com/aiperf-action/aiperf-action/internal/record"
	"github.com/aiperf-action/aiperf-action/internal/result"
)

// runJSON is a small valid run.json as a generic document.
func runJSON(t *testing.T) map[string]any {
	t.Helper()
	agg := metrics.NewAggregator(time.Second, nil)
	for i := range 40 {
		sent := int64(i) * int64(50*time.Millisecond)
		r := record.Record{Streaming: true, Sent: sent, Due: sent, ISL: 8, OSL: 4}
		for k := range 4 {
			r.Chunks = append(r.Chunks, sent+int64(20+k*5)*int64(time.Millisecond))
		}
		r.FirstToken, r.End = r.Chunks[0], r.Chunks[3]
		agg.Add(&r)
	}
	sum := agg.Summary()
	b, err := json.Marshal(&result.Run{Schema: result.Schema, ProfileHash: "sha256:x", Counts: sum.Counts, Metrics: sum.Metrics, DurationS: sum.DurationS})
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	json.Unmarshal(b, &doc)
	return doc
}

// zeros is a histogram (V2, base64) of recorded zeros.
func zeros(t *testing.T) string {
	h := hdr.New(1, 3_600_000_000, 3)
	for range 10 {
		h.RecordValue(0)
	}
	b, err := h.Encode(hdr.V2CompressedEncodingCookieBase)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A run.json whose histogram or rate a statistic cannot be computed from
// is an error naming the file and the field, before any statistics.
func TestBrokenRunsNameTheField(t *testing.T) {
	t.Parallel()
	ttft := func(doc map[string]any) map[string]any {
		return doc["metrics"].(map[string]any)["time_to_first_token"].(map[string]any)
	}
	tput := func(doc map[string]any) map[string]any {
		return doc["metrics"].(map[string]any)["output_token_throughput"].(map[string]any)
	}
	cases := []struct {
		name   string
		break_ func(map[string]any)
		want   string
	}{
		{"no scale", func(d map[string]any) { delete(ttft(d), "scale") }, "metrics.time_to_first_token.scale is 0"},
		{"no hdr_unit", func(d map[string]any) { delete(ttft(d), "hdr_unit") }, "metrics.time_to_first_token.hdr_unit is missing"},
		{"a histogram of zeros", func(d map[string]any) { ttft(d)["hdr"] = zeros(t) }, "metrics.time_to_first_token.hdr decodes to zero everywhere"},
		{"no histogram", func(d map[string]any) { delete(ttft(d), "hdr") }, `neither "hdr" nor "value"`},
		{"a broken histogram", func(d map[string]any) { ttft(d)["hdr"] = "bm90IGEgaGlzdG9ncmFt" }, "metrics.time_to_first_token.hdr is not a histogram"},
		{"a broken window", func(d map[string]any) { ttft(d)["windows"] = []any{"!!"} }, "metrics.time_to_first_token.windows[0] is not a histogram"},
		{"a zero rate", func(d map[string]any) { tput(d)["value"] = 0 }, "metrics.output_token_throughput.value is 0"},
		{"a negative window rate", func(d map[string]any) { tput(d)["windows"] = []any{1.0, -3.0} }, "metrics.output_token_throughput.windows[1] is -3"},
		{"negative counts", func(d map[string]any) { d["counts"].(map[string]any)["errors"] = -5.0 }, "counts.errors is -5"},
		{"counts that do not add up", func(d map[string]any) { d["counts"].(map[string]any)["ok"] = 7.0 }, "ok 7 + errors 0 is not requests 40"},
		{"zero duration", func(d map[string]any) { d["duration_s"] = 0.0 }, "duration_s is 0 for 40 requests"},
	}
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	b, _ := json.Marshal(runJSON(t))
	os.WriteFile(good, b, 0o644)
	st, err := Default.Parse()
	if err != nil {
		t.Fatal(err)
	}
	base, err := Load("--baseline", []string{good})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Compare(st, base, base); err != nil {
		t.Fatalf("the good run: %v", err)
	}
	for _, c := range cases {
		doc := runJSON(t)
		c.break_(doc)
		p := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".json")
		b, _ := json.Marshal(doc)
		os.WriteFile(p, b, 0o644)
		cand, err := Load("--candidate", []string{p})
		if err == nil {
			_, err = Compare(st, base, cand)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %v, want %q naming %s", c.name, err, c.want, p)
		}
	}
}
