package schedule

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/aiperf-action/aiperf-action/internal/config"
	"github.com/aiperf-action/aiperf-action/internal/seeds"
	"github.com/aiperf-action/aiperf-action/internal/tokenizer"
)

func profile() *config.Profile {
	p := config.DefaultProfile
	p.Model, p.URL, p.RequestCount = "m", "127.0.0.1:1", 20
	p.ISLMean, p.ISLStddev, p.OSLMean, p.OSLStddev = 50, 10, 16, 4
	return &p
}

// entries makes every entry of a built phase.
func entries(t *testing.T, ph *Phase) []Entry {
	t.Helper()
	es, err := ph.All()
	if err != nil {
		t.Fatal(err)
	}
	return es
}

func TestBuildDeterministic(t *testing.T) {
	t.Parallel()
	p := profile()
	a, err := Build(p, 7)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Build(p, 7)
	ja, _ := inputsJSON(a)
	jb, _ := inputsJSON(b)
	if !bytes.Equal(ja, jb) || a.Hash(p) != b.Hash(p) {
		t.Fatal("same seed, different plan")
	}
	c, _ := Build(p, 8)
	if c.Hash(p) == a.Hash(p) {
		t.Fatal("different seed, same hash")
	}
	q := *p
	q.Workers, q.URL = 5, "other:2"
	if a.Hash(&q) != a.Hash(p) {
		t.Fatal("workers or URL changed the profile hash")
	}
	for _, e := range entries(t, a.Profiling()) {
		if e.ISL < 1 || e.MaxTokens < 1 {
			t.Fatalf("entry %d lengths %d/%d", e.Index, e.ISL, e.MaxTokens)
		}
	}
}

func TestISLMatchesTokenizer(t *testing.T) {
	t.Parallel()
	p := profile()
	p.ISLStddev = 0
	pl, _ := Build(p, 1)
	for _, e := range entries(t, pl.Profiling()) {
		var body struct {
			Messages []struct{ Content string } `json:"messages"`
		}
		if err := json.Unmarshal(e.Body, &body); err != nil {
			t.Fatal(err)
		}
		if e.ISL != 50 || tokenizer.Count(body.Messages[0].Content) != 50 {
			t.Fatalf("ISL %d, prompt has %d tokens", e.ISL, tokenizer.Count(body.Messages[0].Content))
		}
	}
}

func TestWarmupLeavesProfilingPlanAlone(t *testing.T) {
	t.Parallel()
	p := profile()
	a, _ := Build(p, 3)
	q := *p
	q.WarmupRequestCount = 5
	b, err := Build(&q, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Phases) != 2 || !b.Phases[0].Warmup() || b.Phases[0].Len() != 5 || len(entries(t, &b.Phases[0])) != 5 {
		t.Fatalf("phases %+v", b.Phases)
	}
	ja, _ := json.Marshal(entries(t, a.Profiling()))
	jb, _ := json.Marshal(entries(t, b.Profiling()))
	if !bytes.Equal(ja, jb) || a.Profiling().Count != b.Profiling().Count {
		t.Error("adding a warmup changed the profiling phase")
	}
}

func TestOpenLoopPlan(t *testing.T) {
	t.Parallel()
	p := profile()
	p.RequestRate, p.RequestCount, p.ArrivalPattern = 100, 50, "constant"
	pl, err := Build(p, 1)
	if err != nil {
		t.Fatal(err)
	}
	ph := pl.Profiling()
	if !ph.Open || ph.Ceiling != 0 || ph.Len() != 50 {
		t.Fatalf("phase open=%v ceiling=%d n=%d", ph.Open, ph.Ceiling, ph.Len())
	}
	for i, e := range entries(t, ph) {
		if want := int64(i) * 10_000_000; e.DueNs < want-1 || e.DueNs > want+1 {
			t.Fatalf("entry %d due %d, want %d", i, e.DueNs, want)
		}
	}
	p.ConcurrencySet, p.Concurrency = true, 4
	pl, _ = Build(p, 1)
	if pl.Profiling().Ceiling != 4 {
		t.Error("--concurrency with a rate is not a ceiling")
	}
}

func TestCancellationFractionAndPurity(t *testing.T) {
	t.Parallel()
	n := 0
	for i := 0; i < 10000; i++ {
		first, again := Cancelled(5, i, 25), Cancelled(5, i, 25)
		if first {
			n++
		}
		if first != again {
			t.Fatal("not a pure function")
		}
	}
	if n < 2300 || n > 2700 {
		t.Errorf("%d of 10000 cancelled at 25%%", n)
	}
	p := profile()
	p.CancellationRate, p.CancellationDelay = 50, 0.25
	pl, _ := Build(p, 5)
	for _, e := range entries(t, pl.Profiling()) {
		want := int64(0)
		if Cancelled(5, e.Index, 50) {
			want = 250_000_000
		}
		if e.CancelAfterNs != want {
			t.Fatalf("entry %d cancel after %d, want %d", e.Index, e.CancelAfterNs, want)
		}
	}
}

func TestDurationClosedLoopCycles(t *testing.T) {
	t.Parallel()
	p := profile()
	p.BenchmarkDuration, p.NumDatasetEntries = 5, 7
	pl, err := Build(p, 1)
	if err != nil {
		t.Fatal(err)
	}
	ph := pl.Profiling()
	pool := entries(t, ph)
	if !ph.Cycle || len(pool) != 7 || ph.DurationNs != 5e9 {
		t.Fatalf("phase %+v", ph)
	}
	// Each cycle after the first sends its own first word: no request of a
	// run resends an earlier one's prompt, and every prompt keeps its length.
	content := func(b []byte) string {
		var body struct {
			Messages []struct{ Content string } `json:"messages"`
		}
		if err := json.Unmarshal(b, &body); err != nil || len(body.Messages) != 1 {
			t.Fatalf("body %s: %v", b, err)
		}
		return body.Messages[0].Content
	}
	seen := map[string]bool{}
	for c := 0; c < 300; c++ {
		for i, e := range pool {
			text := content(e.Fresh(c, pl.Words()))
			if seen[text] {
				t.Fatalf("cycle %d entry %d resends a prompt", c, i)
			}
			seen[text] = true
			if got := tokenizer.Count(text); got != e.ISL {
				t.Fatalf("cycle %d entry %d: %d tokens, want %d", c, i, got, e.ISL)
			}
			if c == 0 && !bytes.Equal(e.Fresh(0, pl.Words()), e.Body) {
				t.Fatal("the first cycle changed its body")
			}
		}
	}
	// A pool from an input file is the user's text: sent as it is.
	f := filepath.Join(t.TempDir(), "in.jsonl")
	os.WriteFile(f, []byte(`{"text": "the same words"}`+"\n"), 0o644)
	p.InputFile = f
	pl, err = Build(p, 1)
	if err != nil {
		t.Fatal(err)
	}
	if e := entries(t, pl.Profiling())[0]; e.FreshAt != 0 || !bytes.Equal(e.Fresh(3, pl.Words()), e.Body) {
		t.Fatalf("a file's prompt is changed: %+v", e)
	}
}

// Each gate repeat sends its own prompts, so no repeat is served from the
// server's prefix cache of another, with the same lengths, ids and schedule
// as every other repeat, and one profile_hash across the repeats; repeat r
// is the same in every job (the baseline's repeat r sent the same).
func TestRepeatsSendTheirOwnPrompts(t *testing.T) {
	t.Parallel()
	p := profile()
	p.WarmupRequestCount = 3
	lone, _ := Build(p, 7)
	plans := map[int]*Plan{}
	for r := 1; r <= 3; r++ {
		q := *p
		q.Repeat = r
		pl, err := Build(&q, 7)
		if err != nil {
			t.Fatal(err)
		}
		plans[r] = pl
		if pl.Hash(&q) != plans[1].Hash(&q) {
			t.Errorf("repeat %d: a hash of its own", r)
		}
		if pl.Hash(&q) == lone.Hash(p) {
			t.Errorf("repeat %d has the hash of runs that send the same prompts each time", r)
		}
		again, _ := Build(&q, 7)
		a, _ := inputsJSON(pl)
		b, _ := inputsJSON(again)
		if !bytes.Equal(a, b) {
			t.Errorf("repeat %d is not the same plan in every job", r)
		}
	}
	firsts := map[string]int{}
	for r, pl := range plans {
		for k := range pl.Phases {
			lones := entries(t, &lone.Phases[k])
			for i, e := range entries(t, &pl.Phases[k]) {
				le := lones[i]
				if e.ISL != le.ISL || e.MaxTokens != le.MaxTokens || e.DueNs != le.DueNs || e.SessionID != le.SessionID {
					t.Fatalf("repeat %d entry %d: shape %+v, lone run %+v", r, i, e, le)
				}
				if bytes.Equal(e.Body, le.Body) {
					t.Fatalf("repeat %d entry %d sends the lone run's prompt", r, i)
				}
				var body struct {
					Messages []struct{ Content string } `json:"messages"`
				}
				json.Unmarshal(e.Body, &body)
				words := body.Messages[0].Content
				if len(words) > 24 {
					words = words[:24]
				}
				if prev, ok := firsts[words]; ok && prev != r {
					t.Fatalf("repeats %d and %d share a prompt prefix %q", prev, r, words)
				}
				firsts[words] = r
			}
		}
	}
}

// A payload seed of the run's own (a gate job's, seeds.Fresh) changes the
// words and nothing else: the lengths, due times and ids are the seed's,
// the profile_hash is every repeat's, the warmup has words of its own too,
// and PayloadSeed (run.json's payload_seed) names it, so that a profile
// given it again rebuilds the same plan.
func TestPayloadSeedChangesOnlyTheWords(t *testing.T) {
	t.Parallel()
	p := profile()
	p.WarmupRequestCount = 3
	p.Repeat = 2
	rep, _ := Build(p, 7)
	q := *p
	q.PayloadSeed = seeds.Fresh(7, 99, 1)
	own, err := Build(&q, 7)
	if err != nil {
		t.Fatal(err)
	}
	if own.Hash(&q) != rep.Hash(p) {
		t.Error("a payload seed of its own changes the profile_hash")
	}
	if got := PayloadSeed(&q, 7); got != q.PayloadSeed {
		t.Errorf("PayloadSeed = %d, want the profile's %d", got, q.PayloadSeed)
	}
	if got := PayloadSeed(p, 7); got != seeds.PayloadSeed(7, 2) {
		t.Errorf("without one, PayloadSeed = %d, want the repeat's %d", got, seeds.PayloadSeed(7, 2))
	}
	for k := range own.Phases {
		reps := entries(t, &rep.Phases[k])
		for i, e := range entries(t, &own.Phases[k]) {
			re := reps[i]
			if e.ISL != re.ISL || e.MaxTokens != re.MaxTokens || e.DueNs != re.DueNs || e.CancelAfterNs != re.CancelAfterNs || e.SessionID != re.SessionID {
				t.Fatalf("phase %d entry %d: shape %+v, the repeat's %+v", k, i, e, re)
			}
			if bytes.Equal(e.Body, re.Body) {
				t.Fatalf("phase %d entry %d sends the repeat's prompt", k, i)
			}
		}
	}
	w, m := entries(t, &own.Phases[0]), entries(t, own.Profiling())
	if bytes.Equal(w[0].Body, m[0].Body) {
		t.Error("the warmup sends the measured phase's first prompt")
	}
	again, _ := Build(&q, 7)
	a, _ := inputsJSON(own)
	b, _ := inputsJSON(again)
	if !bytes.Equal(a, b) {
		t.Error("a payload seed does not rebuild the same plan")
	}
}

// inputs.json written one session at a time is byte for byte what
// MarshalIndent makes of the whole file.
func TestInputsJSONStreamedIsMarshalIndent(t *testing.T) {
	t.Parallel()
	p := profile()
	p.WarmupRequestCount = 2
	pl, err := Build(p, 3)
	if err != nil {
		t.Fatal(err)
	}
	var f inputsFile
	for k := range pl.Phases {
		ph := &pl.Phases[k]
		for _, e := range entries(t, ph) {
			s := inputSession{SessionID: e.SessionID, Payloads: []json.RawMessage{e.Body}}
			if ph.Warmup() {
				s.Phase = PhaseWarmup
			}
			f.Data = append(f.Data, s)
		}
	}
	want, _ := json.MarshalIndent(f, "", "  ")
	got, err := inputsJSON(pl)
	if err != nil || !bytes.Equal(got, append(want, '\n')) {
		t.Fatalf("streamed inputs.json differs (%v):\n%s\nwant:\n%s", err, got[:min(400, len(got))], want[:min(400, len(want))])
	}
}

// Each worker's share, generated on its own with the others' entries
// passed over, is exactly its part of the whole plan: together the shares
// are every entry once, byte for byte, dealt as the round robin deals.
func TestSharesPartitionThePlan(t *testing.T) {
	t.Parallel()
	p := profile()
	p.RequestRate, p.RequestCount, p.CancellationRate, p.CancellationDelay = 50, 40, 20, 0.1
	pl, err := Build(p, 9)
	if err != nil {
		t.Fatal(err)
	}
	ph := pl.Profiling()
	all := entries(t, ph)
	weights := []int{3, 2, 2}
	rr := NewRoundRobin(weights)
	want := make([][]Entry, len(weights))
	for _, e := range all {
		w := rr.Next()
		want[w] = append(want[w], e)
	}
	for w := range weights {
		var got []Entry
		it := ph.Share(weights, w)
		for it.Next(true) {
			got = append(got, it.Entry())
		}
		if it.Err() != nil {
			t.Fatal(it.Err())
		}
		a, _ := json.Marshal(got)
		b, _ := json.Marshal(want[w])
		if !bytes.Equal(a, b) || len(got) == 0 {
			t.Errorf("worker %d: %d entries, want %d; differ: %v", w, len(got), len(want[w]), !bytes.Equal(a, b))
		}
	}
}

// What a worker pays to make its share of a plan at ISL 2048, per entry of
// the whole plan: alone (every entry its own, its body built), and as one
// of 4 workers (passing over the other three's entries, drawing their
// words but building no body).
func BenchmarkShareISL2048(b *testing.B) {
	for _, workers := range []int{1, 4} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			p := profile()
			p.ISLMean, p.ISLStddev, p.RequestCount = 2048, 0, b.N*workers
			pl, err := Build(p, 1)
			if err != nil {
				b.Fatal(err)
			}
			weights := make([]int, workers)
			for i := range weights {
				weights[i] = 1
			}
			b.ReportAllocs()
			b.ResetTimer()
			it := pl.Profiling().Share(weights, 0)
			for it.Next(true) {
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*workers), "ns/plan-entry")
		})
	}
}

// --sequence-distribution: each prompt draws its (ISL, OSL) bucket by
// weight: over 4,000 prompts each bucket's share is within 2.5 points of
// its weight, and every prompt has its bucket's lengths exactly.
func TestSequenceDistribution(t *testing.T) {
	t.Parallel()
	p := profile()
	p.RequestCount, p.SeqDist = 4000, "16,4:25;64,8:50;128,16:25"
	pl, err := Build(p, 3)
	if err != nil {
		t.Fatal(err)
	}
	n := map[int]int{}
	for _, e := range entries(t, pl.Profiling()) {
		want := map[int]int{16: 4, 64: 8, 128: 16}[e.ISL]
		if want == 0 || e.MaxTokens != want {
			t.Fatalf("entry %d: ISL %d, OSL %d", e.Index, e.ISL, e.MaxTokens)
		}
		n[e.ISL]++
	}
	for isl, w := range map[int]float64{16: 25, 64: 50, 128: 25} {
		if got := 100 * float64(n[isl]) / 4000; math.Abs(got-w) > 2.5 {
			t.Errorf("ISL %d: %.1f%% of prompts, weight %g%%", isl, got, w)
		}
	}
	for _, bad := range []string{"16,4", "16:25", "0,4:10", "16,4:-1", "16|x,4:10"} {
		if _, err := config.ParseSeqDist(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// --dataset-sampling-strategy over a 10-prompt file and 30 requests:
// sequential takes them in file order, shuffle each pass of 10 in its own
// order (every prompt once a pass), random with replacement; each the same
// for a seed.
func TestDatasetSampling(t *testing.T) {
	t.Parallel()
	f := filepath.Join(t.TempDir(), "in.jsonl")
	var lines []string
	for i := 0; i < 10; i++ {
		lines = append(lines, fmt.Sprintf(`{"text": "prompt%d"}`, i))
	}
	os.WriteFile(f, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	order := func(strategy string) []int {
		p := profile()
		p.InputFile, p.RequestCount, p.DatasetSampling = f, 30, strategy
		pl, err := Build(p, 5)
		if err != nil {
			t.Fatal(err)
		}
		var out []int
		for _, e := range entries(t, pl.Profiling()) {
			var body struct {
				Messages []struct{ Content string } `json:"messages"`
			}
			json.Unmarshal(e.Body, &body)
			var k int
			fmt.Sscanf(body.Messages[0].Content, "prompt%d", &k)
			out = append(out, k)
		}
		return out
	}
	seq, shuf, rnd := order("sequential"), order("shuffle"), order("random")
	for i, k := range seq {
		if k != i%10 {
			t.Fatalf("sequential: %v", seq)
		}
	}
	for pass := 0; pass < 3; pass++ {
		got := append([]int{}, shuf[10*pass:10*pass+10]...)
		slices.Sort(got)
		if !slices.Equal(got, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}) {
			t.Fatalf("shuffle pass %d is not a permutation: %v", pass, shuf)
		}
	}
	if slices.Equal(shuf, seq) || slices.Equal(shuf[:10], shuf[10:20]) {
		t.Errorf("shuffle: %v", shuf)
	}
	seen := map[int]bool{}
	for _, k := range rnd[:10] {
		seen[k] = true
	}
	if len(seen) == 10 || !slices.Equal(rnd, order("random")) {
		t.Errorf("random: %v (10 draws from 10 with replacement all differ 1 time in 2,755)", rnd)
	}
}

// Prefix shapes: with 4 prefix prompts of 16 tokens and a 10-token shared
// system prompt, every request's user text starts with one of the 4 (each
// used), all share one system message, and ISL counts all of it; a repeat
// has prefixes of its own.
func TestPrefixShapes(t *testing.T) {
	t.Parallel()
	p := profile()
	p.RequestCount, p.ISLStddev = 200, 0
	p.NumPrefixPrompts, p.PrefixPromptLength, p.SharedSystemPromptLength = 4, 16, 10
	pl, err := Build(p, 2)
	if err != nil {
		t.Fatal(err)
	}
	type msg struct{ Role, Content string }
	prefixes, systems := map[string]int{}, map[string]bool{}
	for _, e := range entries(t, pl.Profiling()) {
		var body struct{ Messages []msg }
		json.Unmarshal(e.Body, &body)
		if len(body.Messages) != 2 || body.Messages[0].Role != "system" || body.Messages[1].Role != "user" {
			t.Fatalf("messages %+v", body.Messages)
		}
		sys, user := body.Messages[0].Content, body.Messages[1].Content
		systems[sys] = true
		words := strings.Fields(user)
		prefixes[strings.Join(words[:16], " ")]++
		if got := tokenizer.Count(sys) + tokenizer.Count(user); e.ISL != 50+16+10 || got != e.ISL {
			t.Fatalf("ISL %d, the body holds %d tokens", e.ISL, got)
		}
	}
	if len(prefixes) != 4 || len(systems) != 1 {
		t.Errorf("%d prefixes, %d system prompts", len(prefixes), len(systems))
	}
	q := *p
	q.Repeat = 1
	other, _ := Build(&q, 2)
	a, b := entries(t, pl.Profiling())[0], entries(t, other.Profiling())[0]
	if bytes.Equal(a.Body[:200], b.Body[:200]) {
		t.Error("a repeat sent the same system prompt and prefix")
	}
}

// A 1 GB --input-file is read as a stream: indexing it and building
// requests from it keep the heap far below the file's size. Skipped
// unless AIPERF_BIG_INPUT=1 (it writes 1 GB under the temp folder).
func TestBigInputFileMemory(t *testing.T) {
	if os.Getenv("AIPERF_BIG_INPUT") != "1" {
		t.Skip("set AIPERF_BIG_INPUT=1 to write and read a 1 GB input file")
	}
	f := filepath.Join(t.TempDir(), "big.jsonl")
	w, err := os.Create(f)
	if err != nil {
		t.Fatal(err)
	}
	line := `{"text": "` + strings.Repeat("lorem ipsum dolor sit amet ", 37) + `", "output_length": 16}` + "\n"
	bw := bufio.NewWriterSize(w, 1<<20)
	n := (1 << 30) / len(line)
	for i := 0; i < n; i++ {
		bw.WriteString(line)
	}
	bw.Flush()
	w.Close()
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	p := profile()
	p.InputFile, p.RequestCount = f, 2000
	pl, err := Build(p, 1)
	if err != nil {
		t.Fatal(err)
	}
	built := time.Since(start)
	it := pl.Profiling().Iter()
	k := 0
	for it.Next(true) {
		k++
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	t.Logf("%d lines (%.2f GB): indexed in %s; %d requests built; heap in use %.0f MB, obtained from the OS %.0f MB (before: %.0f MB)",
		n, float64(n*len(line))/(1<<30), built.Round(time.Millisecond), k, float64(after.HeapInuse)/1e6, float64(after.Sys)/1e6, float64(before.Sys)/1e6)
	if after.Sys > 300e6 || k != 2000 {
		t.Errorf("%.0f MB from the OS for a 1 GB file", float64(after.Sys)/1e6)
	}
}

// AIPerf's random_pool draws a file's lines at random with replacement
// (the same draws --dataset-sampling-strategy random makes), and a line's
// "extra" fields land in its body over --extra-inputs.
func TestRandomPoolAndLineExtra(t *testing.T) {
	t.Parallel()
	f := filepath.Join(t.TempDir(), "pool.jsonl")
	os.WriteFile(f, []byte(`{"text": "What is machine learning?", "extra": {"temperature": 1.2, "top_p": 0.9}}
{"texts": ["Explain", "neural networks."]}
{"text_input": "What are transformers?"}
`), 0o644)
	bodies := func(typ, strategy string) []string {
		p := profile()
		p.InputFile, p.RequestCount, p.CustomDatasetType, p.DatasetSampling = f, 12, typ, strategy
		p.ExtraInputs = []string{"temperature:0.5"}
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
		pl, err := Build(p, 5)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range entries(t, pl.Profiling()) {
			out = append(out, string(e.Body))
		}
		return out
	}
	pool, random, single := bodies("random_pool", ""), bodies("", "random"), bodies("single_turn", "")
	if !slices.Equal(pool, random) {
		t.Fatal("random_pool does not draw as --dataset-sampling-strategy random does")
	}
	if slices.Equal(pool, single) {
		t.Fatal("random_pool took the lines in file order")
	}
	for i, b := range single {
		switch i % 3 {
		case 0:
			if !strings.Contains(b, `"temperature":1.2`) || !strings.Contains(b, `"top_p":0.9`) {
				t.Fatalf("line 1's extra did not win over --extra-inputs: %s", b)
			}
		case 1:
			if !strings.Contains(b, `"content":"Explain\nneural networks."`) || !strings.Contains(b, `"temperature":0.5`) {
				t.Fatalf("line 2: %s", b)
			}
		}
	}
}

// Multi-turn sessions: each session's turns in a row, one id, turn
// numbers from 0, delays from the seed; --request-count cuts the last
// session short; a share deals sessions whole, the shares together are
// the plan, and Counts says how many turns each worker gets.
func TestSessions(t *testing.T) {
	t.Parallel()
	p := profile()
	p.ConversationNum, p.ConversationTurnMean, p.ConversationTurnStddev = 7, 3, 1.5
	p.TurnDelayMean, p.TurnDelayStddev, p.TurnDelayRatio = 50, 20, 0.5
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	pl, err := Build(p, 9)
	if err != nil {
		t.Fatal(err)
	}
	ph := pl.Profiling()
	all := entries(t, ph)
	if !ph.Sessions || len(all) != ph.Count || len(all) < 7 {
		t.Fatalf("sessions %v, %d entries of %d", ph.Sessions, len(all), ph.Count)
	}
	sessions := 0
	for i, e := range all {
		switch {
		case e.Turn == 0:
			sessions++
			if e.DelayNs != 0 {
				t.Fatalf("entry %d: a first turn with a delay", i)
			}
		case e.SessionID != all[i-1].SessionID || e.Turn != all[i-1].Turn+1:
			t.Fatalf("entry %d: turn %d of %s after turn %d of %s", i, e.Turn, e.SessionID, all[i-1].Turn, all[i-1].SessionID)
		case e.DelayNs < 0 || e.DelayNs > int64(200*time.Millisecond):
			t.Fatalf("entry %d: delay %d ns", i, e.DelayNs)
		}
		if e.Prompt == "" || !strings.Contains(string(e.Body), e.Prompt) {
			t.Fatalf("entry %d: its prompt is not its body's", i)
		}
	}
	if sessions != 7 {
		t.Fatalf("%d sessions, want 7", sessions)
	}
	again, _ := Build(p, 9)
	if !slices.EqualFunc(all, entries(t, again.Profiling()), func(a, b Entry) bool {
		return a.SessionID == b.SessionID && a.DelayNs == b.DelayNs && string(a.Body) == string(b.Body)
	}) {
		t.Fatal("the same seed made other sessions")
	}

	weights := []int{2, 1, 1}
	counts := ph.Counts(weights)
	seen := map[int]int{}
	owner := map[string]int{}
	for w := range weights {
		it := ph.Share(weights, w)
		n := 0
		for it.Next(true) {
			e := it.Entry()
			seen[e.Index]++
			if o, ok := owner[e.SessionID]; ok && o != w {
				t.Fatalf("session %s split between workers %d and %d", e.SessionID, o, w)
			}
			owner[e.SessionID] = w
			n++
		}
		if n != counts[w] {
			t.Fatalf("worker %d: %d entries, Counts says %d", w, n, counts[w])
		}
	}
	if len(seen) != len(all) {
		t.Fatalf("the shares hold %d of %d entries", len(seen), len(all))
	}

	p.RequestCount, p.RequestCountSet = 5, true
	cut, _ := Build(p, 9)
	if got := entries(t, cut.Profiling()); len(got) != 5 || got[0].SessionID != all[0].SessionID {
		t.Fatalf("--request-count 5: %d entries", len(got))
	}
}

// --user-context-prompt-length starts every session's first turn with a
// context of its own (none shared between sessions), counted in its ISL.
func TestUserContextPerSession(t *testing.T) {
	t.Parallel()
	p := profile()
	p.ConversationNum, p.ConversationTurnMean, p.UserContextPromptLength, p.ISLStddev = 5, 2, 30, 0
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	pl, err := Build(p, 4)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range entries(t, pl.Profiling()) {
		if e.Turn > 0 {
			if e.ISL != 50 {
				t.Fatalf("a later turn of %d tokens, want its own 50", e.ISL)
			}
			continue
		}
		words := strings.Fields(e.Prompt)
		ctx := strings.Join(words[:30], " ")
		if e.ISL != 80 || len(words) != 80 || seen[ctx] {
			t.Fatalf("first turn: ISL %d, %d words, context seen before: %v", e.ISL, len(words), seen[ctx])
		}
		seen[ctx] = true
	}
	if len(seen) != 5 {
		t.Fatalf("%d contexts for 5 sessions", len(seen))
	}
}

// A Baseten Parquet trace is replayed on its Unix-ms timestamps from its
// first, each row's literal prompt with output_tokens as max tokens.
func TestBasetenReplay(t *testing.T) {
	t.Parallel()
	type row struct {
		Timestamp    int64  `parquet:"timestamp_start_unix_ms"`
		Prompt       string `parquet:"prompt"`
		InputTokens  int64  `parquet:"input_tokens"`
		OutputTokens int64  `parquet:"output_tokens"`
	}
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[row](&buf)
	w.Write([]row{{1_760_000_000_000, "a first prompt", 3, 5}, {1_760_000_000_250, "the second", 2, 7}, {1_760_000_001_000, "third", 1, 9}})
	w.Close()
	f := filepath.Join(t.TempDir(), "trace.parquet")
	os.WriteFile(f, buf.Bytes(), 0o644)
	p := profile()
	p.InputFile, p.CustomDatasetType, p.SynthesisSpeedupRatio = f, config.BasetenTrace, 2
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	pl, err := Build(p, 1)
	if err != nil {
		t.Fatal(err)
	}
	es := entries(t, pl.Profiling())
	wantDue := []time.Duration{0, 125 * time.Millisecond, 500 * time.Millisecond}
	for i, e := range es {
		if time.Duration(e.DueNs) != wantDue[i] || e.MaxTokens != []int{5, 7, 9}[i] {
			t.Errorf("row %d: due %s, max_tokens %d", i+1, time.Duration(e.DueNs), e.MaxTokens)
		}
	}
	if len(es) != 3 || !strings.Contains(string(es[0].Body), "a first prompt") {
		t.Fatalf("%d entries: %s", len(es), es[0].Body)
	}
}

// A tokens-in endpoint's bodies carry the prompt as the tokenizer's ids:
// the same plan built for completions has the same prompts as text, and
// encoding that text (the shared system prompt, then the prompt) gives
// the ids sent, as many as the entry's ISL says (the system prompt's
// included).
func TestTokenIDsAreThePrompts(t *testing.T) {
	t.Parallel()
	p := profile()
	p.Tokenizer = filepath.Join("..", "tokenizer", "testdata", "qwen3-trimmed.json")
	p.SharedSystemPromptLength = 7
	p.EndpointType = "completions"
	text, err := Build(p, 4)
	if err != nil {
		t.Fatal(err)
	}
	q := *p
	q.EndpointType = "vllm_generate"
	ids, err := Build(&q, 4)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(p.Tokenizer, "")
	if err != nil {
		t.Fatal(err)
	}
	te, ie := entries(t, text.Profiling()), entries(t, ids.Profiling())
	if len(te) != len(ie) || len(te) == 0 {
		t.Fatalf("%d and %d entries", len(te), len(ie))
	}
	for i := range te {
		var c struct {
			Prompt string `json:"prompt"`
		}
		var v struct {
			TokenIDs       []int          `json:"token_ids"`
			SamplingParams map[string]int `json:"sampling_params"`
			Prompt         *string        `json:"prompt"`
		}
		if err := json.Unmarshal(te[i].Body, &c); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(ie[i].Body, &v); err != nil {
			t.Fatal(err)
		}
		// (completions puts the system prompt at the prompt's start, a
		// space between.)
		sys, prompt, _ := strings.Cut(c.Prompt, " ")
		for range 6 {
			var w string
			w, prompt, _ = strings.Cut(prompt, " ")
			sys += " " + w
		}
		want, _ := tok.Encode(sys)
		more, _ := tok.Encode(prompt)
		want = append(want, more...)
		if !slices.Equal(v.TokenIDs, want) || len(want) != ie[i].ISL || len(want)-len(more) != 7 || v.Prompt != nil || v.SamplingParams["max_tokens"] != ie[i].MaxTokens {
			t.Fatalf("entry %d: ids %v, want %v (ISL %d); body %s", i, v.TokenIDs, want, ie[i].ISL, ie[i].Body)
		}
	}
}

// A cycling pool sent as token ids gets a fresh first word too: each cycle
// after the first changes the prompt's first id (after the system prompt's)
// to another word's, so no request resends an earlier one's ids, and every
// list keeps its length.
func TestTokensInCyclesFresh(t *testing.T) {
	t.Parallel()
	p := profile()
	p.EndpointType, p.Tokenizer = "vllm_generate", filepath.Join("..", "tokenizer", "testdata", "qwen3-trimmed.json")
	p.BenchmarkDuration, p.NumDatasetEntries, p.SharedSystemPromptLength = 5, 7, 5
	pl, err := Build(p, 1)
	if err != nil {
		t.Fatal(err)
	}
	ids := func(b []byte) []int {
		var body struct {
			TokenIDs []int `json:"token_ids"`
		}
		if err := json.Unmarshal(b, &body); err != nil {
			t.Fatalf("body %s: %v", b, err)
		}
		return body.TokenIDs
	}
	seen := map[string]bool{}
	for i, e := range entries(t, pl.Profiling()) {
		if !e.FreshID {
			t.Fatalf("entry %d: no fresh id (%+v)", i, e)
		}
		first := ids(e.Body)
		for c := 0; c < 300; c++ {
			got := ids(e.Fresh(c, pl.Words()))
			key := fmt.Sprint(got)
			if seen[key] {
				t.Fatalf("cycle %d entry %d resends a prompt", c, i)
			}
			seen[key] = true
			diff := 0
			for k := range got {
				if got[k] != first[k] {
					diff++
					if k != 5 {
						t.Fatalf("cycle %d entry %d: id %d changed, want only the prompt's first (5)", c, i, k)
					}
					if _, _, ok := pl.Words().OfID(got[k]); !ok {
						t.Fatalf("cycle %d: %d is no word's id", c, got[k])
					}
				}
			}
			if len(got) != e.ISL || (c > 0) != (diff == 1) {
				t.Fatalf("cycle %d entry %d: %d ids (ISL %d), %d changed", c, i, len(got), e.ISL, diff)
			}
		}
	}
}

// inputsJSON is the plan's inputs.json, whole.
func inputsJSON(pl *Plan) ([]byte, error) {
	var b bytes.Buffer
	err := pl.WriteInputsJSON(&b)
	return b.Bytes(), err
}

// An orchestrator's think times (dag_jsonl rounds): one lognormal draw a
// round, shared by the round's branches so they start together, clamped
// to the min and max, the first round's too; the seed's, so one seed
// gives the same and another seed others.
func TestDagThinkTimes(t *testing.T) {
	t.Parallel()
	f := filepath.Join(t.TempDir(), "o.jsonl")
	os.WriteFile(f, []byte(`{"session_id": "o", "orchestrator": true, "rounds": 4, "think_time_ms": 100, "think_time_sigma": 0.8, "think_time_min_ms": 20, "think_time_max_ms": 400, "spawns": ["a", "b"]}
{"session_id": "a", "turns": [{"messages": [{"role": "user", "content": "a"}], "max_tokens": 2}]}
{"session_id": "b", "turns": [{"messages": [{"role": "user", "content": "b"}], "max_tokens": 2}]}
`), 0o644)
	delays := func(seed uint64) []time.Duration {
		p := profile()
		p.InputFile, p.CustomDatasetType, p.RequestCountSet, p.Concurrency = f, config.DagJSONL, false, 1
		pl, err := Build(p, seed)
		if err != nil {
			t.Fatal(err)
		}
		var out []time.Duration
		for _, e := range entries(t, pl.Profiling()) {
			if e.Dag == nil {
				t.Fatalf("entry %d has no place in its tree", e.Index)
			}
			out = append(out, time.Duration(e.DelayNs))
		}
		return out
	}
	d := delays(1)
	if len(d) != 8 {
		t.Fatalf("%d entries, want 4 rounds of 2", len(d))
	}
	var rounds []time.Duration
	for r := range 4 {
		a, b := d[2*r], d[2*r+1]
		if a != b || a < 20*time.Millisecond || a > 400*time.Millisecond {
			t.Errorf("round %d: think %v and %v; want one draw in [20ms, 400ms]", r, a, b)
		}
		rounds = append(rounds, a)
	}
	if len(slices.Compact(slices.Sorted(slices.Values(rounds)))) < 3 {
		t.Errorf("the rounds' think times %v are not drawn", rounds)
	}
	if again := delays(1); !slices.Equal(again, d) {
		t.Errorf("one seed, two draws: %v and %v", d, again)
	}
	if other := delays(2); slices.Equal(other, d) {
		t.Errorf("another seed, the same draws: %v", d)
	}
}
