package result

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadRejects(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		return p
	}
	cases := []struct{ name, body, want string }{
		{"truncated.json", `{"schema":"aiperf-action/run/v1","metrics":{`, "not a valid run.json"},
		{"noschema.json", `{"metrics":{}}`, `no "schema"`},
		{"v2.json", `{"schema":"aiperf-action/run/v2","metrics":{}}`, "not supported"},
		{"v10.json", `{"schema":"aiperf-action/run/v10","metrics":{}}`, "not supported"},
		{"v1x.json", `{"schema":"aiperf-action/run/v1x","metrics":{}}`, "not supported"},
		{"badmetric.json", `{"schema":"aiperf-action/run/v1","metrics":{"x":{"unit":"ms"}}}`, "neither"},
	}
	for _, c := range cases {
		_, err := Read(write(c.name, c.body))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.name) && c.name != "badmetric.json" {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	if _, err := Read(filepath.Join(dir, "missing")); err == nil {
		t.Error("missing file accepted")
	}
}

func TestWriteFileAtomicLeavesNoTemp(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "a.json")
	if err := WriteFileAtomic(p, []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(p, []byte("2")); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	b, _ := os.ReadFile(p)
	if len(ents) != 1 || string(b) != "2" {
		t.Fatalf("entries %v, content %q", ents, b)
	}
}

// A minor version of the schema is read as v1.
func TestParseMinorSchema(t *testing.T) {
	t.Parallel()
	if _, err := Parse([]byte(`{"schema":"aiperf-action/run/v1.3","counts":{"requests":1,"ok":1,"errors":0},"duration_s":1,"metrics":{}}`), "minor.json"); err != nil {
		t.Fatal(err)
	}
}
