package wire

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/config"
)

// The handshake allows a second more for every 5 MB of the input file (or
// of a folder's files together), and the plain limit without one or when
// it cannot be read.
func TestHandshakeFor(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.jsonl")
	if err := os.WriteFile(big, make([]byte, 12<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	traces := filepath.Join(dir, "traces")
	os.Mkdir(traces, 0o755)
	os.Mkdir(filepath.Join(traces, "sub"), 0o755)
	for _, n := range []string{"a.jsonl", "b.jsonl"} {
		os.WriteFile(filepath.Join(traces, n), make([]byte, 3<<20), 0o644)
	}
	shard := func(path string) *ShardSpec {
		p := &config.Profile{}
		p.InputFile = path
		return &ShardSpec{Plan: &PlanSpec{Profile: p}}
	}
	for _, tc := range []struct {
		name  string
		shard *ShardSpec
		want  time.Duration
	}{
		{"nil", nil, HandshakeLimit},
		{"hand-made", &ShardSpec{}, HandshakeLimit},
		{"no file", shard(""), HandshakeLimit},
		{"missing", shard(filepath.Join(dir, "none")), HandshakeLimit},
		{"12 MB", shard(big), HandshakeLimit + 2*time.Second},
		{"folder of 6 MB", shard(traces), HandshakeLimit + time.Second},
	} {
		if got := HandshakeFor(tc.shard); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A shard crosses the wire by its JSON names: the plan's schema and the
// profile's tags, never its Go field names; it reads back as it was sent.
func TestShardJSON(t *testing.T) {
	p := &config.Profile{}
	p.Concurrency, p.InputFile = 8, "data.jsonl"
	in := &ShardSpec{URL: "http://127.0.0.1:1", EndpointType: "chat", Streaming: true, TimeoutNs: 5e9,
		Knobs: Knobs{Client: ClientNetHTTP}, Headers: [][2]string{{"X-A", "b"}},
		Phases: []PhaseShard{{Concurrency: 4, Stride: 2, Offset: 1, Count: 10, Total: 20, Weights: []int{1, 1}}},
		Plan:   &PlanSpec{Schema: PlanSchema, Profile: p, Seed: 7, InputDigest: "sha256:x"}}
	b, err := json.Marshal(Control{Type: Shard, Worker: 1, Shard: in})
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{`"schema":"aiperf-action/plan/v1"`, `"concurrency":8`, `"input_file":"data.jsonl"`, `"endpoint_type":"chat"`, `"client":"nethttp"`} {
		if !strings.Contains(s, want) {
			t.Errorf("no %s in %s", want, s)
		}
	}
	for _, goName := range []string{`"Concurrency"`, `"InputFile"`, `"Target"`, `"Load"`} {
		if strings.Contains(s, goName) {
			t.Errorf("a Go name %s on the wire", goName)
		}
	}
	var out Control
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if out.Shard == nil || out.Shard.Plan.Profile.Concurrency != 8 || out.Shard.Plan.Seed != 7 || out.Shard.Phases[0].Weights[1] != 1 || out.Shard.Headers[0][1] != "b" {
		t.Fatalf("read back %+v", out.Shard)
	}
	if Identity(12) != "w12" {
		t.Fatal(Identity(12))
	}
}
