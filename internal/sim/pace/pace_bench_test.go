package pace

import (
	"testing"
	"time"
)

// BenchmarkPacer is the pacer's cost a chunk: 64 streams of 64 chunks
// each, all due at once, to loopback sockets whose peers read everything.
// It is the write syscall plus the heap, the schedule's Due and the Sent
// call; ns/chunk is wall time over chunks written.
func BenchmarkPacer(b *testing.B) {
	const streams, chunks = 64, 64
	s := newSink(b)
	p := New(true)
	defer p.Close()
	sts := make([]*Stream, streams)
	for i := range sts {
		_, rc := s.dial(b)
		sts[i] = &Stream{Conn: rc, N: chunks,
			Chunk: func(k int, b []byte) []byte { return append(b, "data: {\"x\":1}\n\n"...) },
			Sent:  func(int, time.Time) {}}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		now := time.Now()
		due := Exact(func(int) time.Time { return now })
		for _, st := range sts {
			st.K, st.Done, st.Sched = 0, nil, due
			p.Add(st)
		}
		for _, st := range sts {
			<-st.Done
			if st.K != chunks {
				b.Fatalf("%d chunks of %d (err %v)", st.K, chunks, st.Err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*streams*chunks), "ns/chunk")
}
