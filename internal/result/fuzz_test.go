package result

import "testing"

// FuzzParse: any bytes as a run.json either parse into a run whose counts
// hold together, or give an error naming the path; nothing panics.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"schema":"aiperf-action/run/v1","counts":{"requests":2,"ok":2,"errors":0},"duration_s":1,"metrics":{}}`))
	f.Add([]byte(`{"schema":"aiperf-action/run/v1","counts":{"requests":1,"ok":-1,"errors":2},"metrics":{"x":{}}}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Parse(b, "fuzz/run.json")
		if err != nil {
			return
		}
		if c := r.Counts; c.OK+c.Errors != c.Requests || c.OK < 0 || c.Errors < 0 {
			t.Fatalf("parsed counts that do not hold together: %+v", c)
		}
	})
}
