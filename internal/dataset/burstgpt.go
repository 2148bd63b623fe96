package dataset

import (
	"bufio"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/aiperf-action/aiperf-action/internal/tokenizer"
)

// indexBurstGPT reads a BurstGPT trace (CSV with a header naming
// "Timestamp" in seconds, "Request tokens" and "Response tokens"; other
// columns, such as "Model" and "Log Type", are passed over) as a stream:
// each row a request of that many input tokens (synthesized, row j from
// its own source) and that many output tokens, at that time. Rows whose
// request or response has no tokens (failed requests in BurstGPT's logs)
// are left out. Errors name the file and the row.
func indexBurstGPT(path string, tok *tokenizer.Tokenizer, words uint64) (*Index, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--input-file: %w", err)
	}
	defer f.Close()
	sum := sha256.New()
	r := csv.NewReader(bufio.NewReaderSize(io.TeeReader(f, sum), 1<<20))
	r.ReuseRecord = true
	head, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: no CSV header: %v", path, err)
	}
	col := map[string]int{}
	for i, h := range head {
		col[strings.ToLower(strings.TrimSpace(h))] = i
	}
	ts, okT := col["timestamp"]
	req, okQ := col["request tokens"]
	resp, okR := col["response tokens"]
	if !okT || !okQ || !okR {
		return nil, fmt.Errorf("%s: a BurstGPT CSV's header names \"Timestamp\", \"Request tokens\" and \"Response tokens\"; this one has %q", path, head)
	}
	x := &Index{Path: path, tok: orBuiltin(tok), words: words, lengths: true}
	var problems []error
	for row := 2; ; row++ {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			problems = append(problems, fmt.Errorf("%s: row %d: %v", path, row, err))
		} else {
			t, e1 := strconv.ParseFloat(strings.TrimSpace(rec[ts]), 64)
			in, e2 := strconv.Atoi(strings.TrimSpace(rec[req]))
			out, e3 := strconv.Atoi(strings.TrimSpace(rec[resp]))
			switch {
			case e1 != nil || e2 != nil || e3 != nil || t < 0 || math.IsInf(t, 0) || in < 0 || out < 0:
				problems = append(problems, fmt.Errorf("%s: row %d: want a timestamp in seconds and whole token counts, not negative", path, row))
			case in > MaxInputLength || out > MaxInputLength:
				problems = append(problems, fmt.Errorf("%s: row %d: past %d tokens", path, row, MaxInputLength))
			case in > 0 && out > 0:
				x.Lines = append(x.Lines, LineMeta{ISL: int32(in), MaxTokens: int32(out), TimestampMs: 1000 * t, HasTime: true, Derived: true})
			}
		}
		if len(problems) == maxProblems {
			break
		}
	}
	if len(problems) > 0 {
		return nil, errors.Join(problems...)
	}
	if len(x.Lines) == 0 {
		return nil, fmt.Errorf("%s: no request with tokens in and out", path)
	}
	x.Digest = hex.EncodeToString(sum.Sum(nil))
	return x, nil
}
