package config

import "testing"

// FuzzGate: any bytes as a gate config either load and validate, or give
// an error; nothing panics.
func FuzzGate(f *testing.F) {
	f.Add([]byte("server: simulator\nscenarios:\n  - name: a\n    concurrency: 2\nthresholds:\n  metrics: [\"time_to_first_token:p99:10%\"]\n"))
	f.Add([]byte("server: {command: x, ready-url: http://127.0.0.1:1}\nbaseline-server: {simulator: true, mode: engine}\nrepeats: 3\nmax-repeats: 9\n"))
	f.Add([]byte(""))
	f.Add([]byte("scenarios: [{name: \"..\"}]"))
	f.Fuzz(func(t *testing.T, b []byte) {
		g, err := ParseGate(b, "fuzz.yml")
		if err != nil {
			return
		}
		_ = g.Validate()
		_ = g.Override(func(string) string { return "" })
	})
}
