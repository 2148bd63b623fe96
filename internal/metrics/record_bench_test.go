package metrics

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/record"
)

// BenchmarkRecordPath is one record's trip after its request ends: batch
// encoding in the worker (64 records a message), decoding in the
// controller, and aggregation (including one inter-chunk latency per
// chunk). Records have 128 chunks.
func BenchmarkRecordPath(b *testing.B) {
	batch := record.Batch{Worker: 0, First: 1}
	for i := 0; i < 64; i++ {
		r := rec(int64(i), 20, 10, 128)
		r.SessionID = "0b4e6a1c-9d7e-4f7a-8b1e-3c2d1f0e9a8b"
		batch.Records = append(batch.Records, r)
	}
	a := NewAggregator(5*time.Second, nil)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += 64 {
		buf, err := json.Marshal(&batch)
		if err != nil {
			b.Fatal(err)
		}
		var got record.Batch
		if err := json.Unmarshal(buf, &got); err != nil {
			b.Fatal(err)
		}
		for j := range got.Records {
			a.Add(&got.Records[j])
		}
	}
}
