package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/record"
	"github.com/aiperf-action/aiperf-action/internal/result"
)

// A report's scale, on demand (AIPERF_REPORT_SCALE=N writes a run folder
// of N requests into AIPERF_REPORT_SCALE_DIR and reports it; measure its
// memory from outside: /usr/bin/time -v aiperf-action report DIR). The
// folder's run.json is a real run's; records.jsonl is N requests at
// 1,000 a second, 64 chunks each, with a TTFT that wanders and a burst of
// timeouts, as the workers write them.
func TestReportScale(t *testing.T) {
	n, _ := parseInt(os.Getenv("AIPERF_REPORT_SCALE"))
	dir := os.Getenv("AIPERF_REPORT_SCALE_DIR")
	if n <= 0 || dir == "" {
		t.Skip("AIPERF_REPORT_SCALE=N AIPERF_REPORT_SCALE_DIR=DIR")
	}
	_, url := startSim(t, 5*time.Millisecond, time.Millisecond)
	if res := runCLI(t, time.Minute, "profile", "-m", "sim", "-u", url, "--streaming", "--concurrency", "8", "--request-count", "200",
		"--osl", "64", "--extra-inputs", "ignore_eos:true", "--artifact-dir", dir); res.code != 0 {
		t.Fatalf("exit %d %s", res.code, res.stderr)
	}
	err := result.WriteAtomicFunc(filepath.Join(dir, result.RecordsFile), func(w0 io.Writer) error {
		w := bufio.NewWriterSize(w0, 1<<20)
		rng := rand.New(rand.NewPCG(1, 2))
		for i := 0; i < n; i++ {
			sent := int64(i) * 1e6
			ttft := int64((40 + 15*math.Sin(float64(i)/20000) + 10*rng.ExpFloat64()) * 1e6)
			r := record.Record{Worker: i % 16, Seq: uint64(i/16 + 1), Index: i, Due: sent, Sent: sent + 20000, Streaming: true, ISL: 512, OSL: 64, FirstToken: sent + ttft}
			if i%100000 > 99000 {
				r.ErrKind, r.End = record.ErrTimeout, sent+30e9
			} else {
				for c := 0; c < 64; c++ {
					r.Chunks = append(r.Chunks, r.FirstToken+int64(c)*int64(7e6+rng.IntN(2e6)))
				}
				r.End = r.Chunks[63] + 1e5
			}
			b, _ := json.Marshal(&r)
			w.Write(append(b, '\n'))
		}
		return w.Flush()
	})
	if err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(filepath.Join(dir, result.RecordsFile))
	t.Logf("%s: %d requests, %.0f MB", dir, n, float64(st.Size())/1e6)
}

func parseInt(s string) (int, error) {
	var n int
	_, err := fmt.Sscan(s, &n)
	return n, err
}
