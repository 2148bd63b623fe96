package cli

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/record"
	"github.com/aiperf-action/aiperf-action/internal/result"
)

// Multi-turn sessions end to end, with AIPerf's flags, over two worker
// processes: every session's turns go in order on one worker, each sent
// at least its delay after the previous turn's answer, with the history
// (earlier turns and the server's own answers) in front, so the client's
// ISL of each turn is exactly what the server counted; each session's own
// context (--user-context-prompt-length) starts its first turn.
func TestMultiTurnSessions(t *testing.T) {
	_, url := startSim(t, 2*time.Millisecond, time.Millisecond)
	dir := filepath.Join(t.TempDir(), "run")
	res := runCLI(t, time.Minute, "profile", "-m", "sim", "-u", url, "--streaming", "--isl", "24", "--osl", "6",
		"--conversation-num", "6", "--conversation-turn-mean", "3", "--conversation-turn-stddev", "1",
		"--conversation-turn-delay-mean", "30", "--user-context-prompt-length", "40", "--concurrency", "3", "--workers", "2", "--random-seed", "3",
		"--use-server-token-count", "--artifact-dir", dir)
	r, err := result.Read(dir)
	if res.code != 0 || err != nil {
		t.Fatalf("exit %d, %v\n%s", res.code, err, res.stderr)
	}
	recs := readRecords(t, dir)
	if r.Counts.Errors != 0 || len(recs) < 6 {
		t.Fatalf("counts %+v, %d records", r.Counts, len(recs))
	}
	bySession := map[string][]record.Record{}
	for _, rec := range recs {
		bySession[rec.SessionID] = append(bySession[rec.SessionID], rec)
	}
	if len(bySession) != 6 {
		t.Fatalf("%d sessions, want 6", len(bySession))
	}
	turns := 0
	for id, rs := range bySession {
		slices.SortFunc(rs, func(a, b record.Record) int { return a.Turn - b.Turn })
		for k, rec := range rs {
			turns++
			if rec.Turn != k || rec.Worker != rs[0].Worker {
				t.Fatalf("session %s: turn %d (worker %d) at place %d (worker %d)", id, rec.Turn, rec.Worker, k, rs[0].Worker)
			}
			if rec.ServerISL != rec.ISL {
				t.Errorf("session %s turn %d: ISL %d, the server counted %d", id, k, rec.ISL, rec.ServerISL)
			}
			if k == 0 && rec.ISL != 40+24 {
				t.Errorf("session %s: first turn ISL %d, want its 40-token context and 24", id, rec.ISL)
			}
			if k > 0 {
				prev := rs[k-1]
				if gap := time.Duration(rec.Sent - prev.End); gap < 30*time.Millisecond {
					t.Errorf("session %s turn %d sent %s after turn %d's answer ended, before its 30 ms delay", id, k, gap, k-1)
				}
				if want := prev.ISL + prev.OSL + 24; rec.ISL != want {
					t.Errorf("session %s turn %d: ISL %d, want the history's %d + %d + 24", id, k, rec.ISL, prev.ISL, prev.OSL)
				}
			}
		}
	}
	t.Logf("%d sessions, %d turns, on %d workers", len(bySession), turns, 2)
}

// An AIPerf multi_turn file (testdata/conversations.jsonl: three
// conversations, a leading system turn lifted into every request, delays,
// per-turn output lengths and extra fields): each conversation's turns in
// order with their history, the server counting exactly the ISL the
// client planned.
func TestMultiTurnFile(t *testing.T) {
	_, url := startSim(t, 2*time.Millisecond, time.Millisecond)
	dir := filepath.Join(t.TempDir(), "run")
	res := runCLI(t, time.Minute, "profile", "-m", "sim", "-u", url, "--streaming", "--osl", "6", "--input-file", "testdata/conversations.jsonl",
		"--custom-dataset-type", "multi_turn", "--concurrency", "2", "--random-seed", "3", "--use-server-token-count", "--artifact-dir", dir)
	r, err := result.Read(dir)
	if res.code != 0 || err != nil {
		t.Fatalf("exit %d, %v\n%s", res.code, err, res.stderr)
	}
	recs := readRecords(t, dir)
	if r.Counts.OK != 6 || len(recs) != 6 {
		t.Fatalf("counts %+v: want 6 turns (the system turn is not one)", r.Counts)
	}
	slices.SortFunc(recs, func(a, b record.Record) int { return a.Index - b.Index })
	wantTurn := []int{0, 1, 0, 1, 2, 0}
	wantMax := []int{5, 3, 6, 6, 6, 4}
	for i, rec := range recs {
		if rec.Turn != wantTurn[i] || rec.MaxTokens != wantMax[i] || rec.ServerISL != rec.ISL {
			t.Errorf("request %d: turn %d, max_tokens %d, ISL %d (server %d); want turn %d, max_tokens %d", i, rec.Turn, rec.MaxTokens, rec.ISL, rec.ServerISL, wantTurn[i], wantMax[i])
		}
	}
	if gap := time.Duration(recs[1].Sent - recs[0].End); gap < 40*time.Millisecond {
		t.Errorf("chat_1's second turn went %s after the first's answer, before its 40 ms delay", gap)
	}
	if recs[0].SessionID != recs[1].SessionID || recs[2].SessionID != recs[4].SessionID || recs[0].SessionID == recs[2].SessionID {
		t.Errorf("session ids %s %s %s %s", recs[0].SessionID, recs[1].SessionID, recs[2].SessionID, recs[4].SessionID)
	}
}

// User-centric load (--num-users 4 --user-centric-rate 40): each user runs
// one session at a time, sending each turn at least num-users/rate =
// 100 ms after its previous one, the users staggered, so that together
// they send at the rate and never faster.
func TestUserCentricRate(t *testing.T) {
	_, url := startSim(t, 2*time.Millisecond, time.Millisecond)
	dir := filepath.Join(t.TempDir(), "run")
	res := runCLI(t, time.Minute, "profile", "-m", "sim", "-u", url, "--streaming", "--isl", "16", "--osl", "4",
		"--conversation-num", "8", "--conversation-turn-mean", "3", "--num-users", "4", "--user-centric-rate", "40",
		"--workers", "2", "--random-seed", "5", "--artifact-dir", dir)
	r, err := result.Read(dir)
	if res.code != 0 || err != nil {
		t.Fatalf("exit %d, %v\n%s", res.code, err, res.stderr)
	}
	recs := readRecords(t, dir)
	if r.Counts.OK != 24 {
		t.Fatalf("counts %+v, want 24 turns", r.Counts)
	}
	bySession := map[string][]record.Record{}
	first, last := recs[0].Due, recs[0].Due
	for _, rec := range recs {
		bySession[rec.SessionID] = append(bySession[rec.SessionID], rec)
		first, last = min(first, rec.Due), max(last, rec.Due)
	}
	for id, rs := range bySession {
		slices.SortFunc(rs, func(a, b record.Record) int { return a.Turn - b.Turn })
		for k := 1; k < len(rs); k++ {
			// Due is the turn's place on the user's grid (Sent, a few µs
			// on, is the stamp of the send).
			if gap := time.Duration(rs[k].Due - rs[k-1].Due); gap < 100*time.Millisecond {
				t.Errorf("session %s: turn %d due %s after turn %d, inside the user's 100 ms gap", id, k, gap, k-1)
			}
			if rs[k].Sent < rs[k].Due {
				t.Errorf("session %s: turn %d sent before it was due", id, k)
			}
		}
	}
	// 24 sends at 40/s are due over at least 23/40 s; a schedule that
	// ignored the rate would send them all at once.
	span := time.Duration(last - first)
	t.Logf("24 requests over %s: %.1f requests/s (rate 40)", span, 23/span.Seconds())
	if span < 550*time.Millisecond {
		t.Errorf("24 requests in %s: faster than --user-centric-rate 40", span)
	}
}

// --prefill-concurrency 2 against engine mode: at no moment are more than
// two requests between their send and their first token, across two
// workers, while up to eight are in flight; without it, more are.
func TestPrefillConcurrency(t *testing.T) {
	_, url := engineSim(t, nil)
	maxInPrefill := func(extra ...string) (int, int) {
		dir := filepath.Join(t.TempDir(), "run")
		args := append([]string{"profile", "-m", "sim", "-u", url, "--streaming", "--isl", "512", "--osl", "16", "--extra-inputs", "ignore_eos:true",
			"--concurrency", "8", "--request-count", "48", "--workers", "2", "--random-seed", "6", "--artifact-dir", dir}, extra...)
		res := runCLI(t, time.Minute, args...)
		r, err := result.Read(dir)
		if res.code != 0 || err != nil || r.Counts.OK != 48 {
			t.Fatalf("exit %d, %v, counts %+v\n%s", res.code, err, r.Counts, res.stderr)
		}
		// Every worker's clock starts at the phase's common start instant,
		// so the records' stamps are on one timeline (to well under the
		// milliseconds a 512-token prefill takes here).
		type ev struct {
			at    int64
			delta int
		}
		var evs []ev
		for _, rec := range readRecords(t, dir) {
			evs = append(evs, ev{rec.Sent, 1}, ev{rec.FirstToken, -1})
		}
		slices.SortFunc(evs, func(a, b ev) int {
			if a.at != b.at {
				return int(a.at - b.at)
			}
			return a.delta - b.delta // (a first token before a send at the same instant)
		})
		n, peak := 0, 0
		for _, e := range evs {
			n += e.delta
			peak = max(peak, n)
		}
		return peak, len(evs) / 2
	}
	free, _ := maxInPrefill()
	capped, n := maxInPrefill("--prefill-concurrency", "2")
	t.Logf("requests in prefill at once: %d without the flag, %d with --prefill-concurrency 2 (%d requests)", free, capped, n)
	if capped > 2 {
		t.Errorf("%d requests in prefill at once with --prefill-concurrency 2", capped)
	}
	if free <= 2 {
		t.Errorf("without the flag only %d were in prefill at once: the test shows nothing", free)
	}
}

// AIPerf's user-centric quick start, scaled down: sessions with a shared
// system prompt and per-user context, stopped by --benchmark-duration
// rather than by running out: at 20 requests/s for 1 s, 20 turns are due
// and none after.
func TestUserCentricDuration(t *testing.T) {
	_, url := startSim(t, 2*time.Millisecond, time.Millisecond)
	dir := filepath.Join(t.TempDir(), "run")
	res := runCLI(t, time.Minute, "profile", "-m", "sim", "-u", url, "--endpoint-type", "chat", "--streaming",
		"--user-centric-rate", "20", "--num-users", "4", "--session-turns-mean", "3", "--shared-system-prompt-length", "50",
		"--user-context-prompt-length", "100", "--synthetic-input-tokens-mean", "26", "--osl", "10", "--num-dataset-entries", "100",
		"--benchmark-duration", "1", "--random-seed", "8", "--use-server-token-count", "--artifact-dir", dir)
	r, err := result.Read(dir)
	if res.code != 0 || err != nil {
		t.Fatalf("exit %d, %v\n%s", res.code, err, res.stderr)
	}
	recs := readRecords(t, dir)
	late := 0
	for _, rec := range recs {
		if rec.Due >= int64(time.Second) {
			late++
		}
		if rec.ServerISL != rec.ISL {
			t.Errorf("request %d: ISL %d, the server counted %d", rec.Index, rec.ISL, rec.ServerISL)
		}
	}
	t.Logf("%d requests in 1 s at 20/s (counts %+v)", len(recs), r.Counts)
	if late > 0 || len(recs) < 15 || len(recs) > 20 {
		t.Errorf("%d requests, %d due after the duration: want 20 due in the second (at least 15 sent on a busy machine)", len(recs), late)
	}
}

// Sessions with --request-rate and --concurrency (AIPerf's
// conversation-centric mode): each session starts on the arrival process,
// never before its due time, holds one of the slots for all its turns
// (so no more sessions than slots are ever open), and sends each later
// turn after the previous answer and its delay.
func TestSessionsOnARate(t *testing.T) {
	_, url := startSim(t, 2*time.Millisecond, time.Millisecond)
	dir := filepath.Join(t.TempDir(), "run")
	res := runCLI(t, time.Minute, "profile", "-m", "sim", "-u", url, "--streaming", "--isl", "16", "--osl", "4",
		"--conversation-num", "8", "--conversation-turn-mean", "3", "--conversation-turn-delay-mean", "30",
		"--request-rate", "20", "--arrival-pattern", "constant", "--concurrency", "2", "--workers", "2", "--random-seed", "5", "--artifact-dir", dir)
	r, err := result.Read(dir)
	if res.code != 0 || err != nil {
		t.Fatalf("exit %d, %v\n%s", res.code, err, res.stderr)
	}
	recs := readRecords(t, dir)
	if r.Counts.OK != 24 {
		t.Fatalf("counts %+v, want 8 sessions of 3 turns", r.Counts)
	}
	bySession := map[string][]record.Record{}
	for _, rec := range recs {
		bySession[rec.SessionID] = append(bySession[rec.SessionID], rec)
	}
	type span struct{ from, to int64 }
	var spans []span
	var dues []int64
	for id, rs := range bySession {
		slices.SortFunc(rs, func(a, b record.Record) int { return a.Turn - b.Turn })
		first := rs[0]
		if first.Sent < first.Due {
			t.Errorf("session %s sent its first turn %s before its due time", id, time.Duration(first.Due-first.Sent))
		}
		dues = append(dues, first.Due)
		for k := 1; k < len(rs); k++ {
			if gap := time.Duration(rs[k].Sent - rs[k-1].End); gap < 30*time.Millisecond {
				t.Errorf("session %s turn %d sent %s after turn %d's answer, before its 30 ms delay", id, k, gap, k-1)
			}
		}
		spans = append(spans, span{first.Sent, rs[len(rs)-1].End})
	}
	slices.Sort(dues)
	for k, d := range dues {
		// Constant arrivals at 20/s: session k is due at k × 50 ms.
		if want := int64(k) * int64(50*time.Millisecond); d < want-int64(time.Millisecond) || d > want+int64(time.Millisecond) {
			t.Errorf("session %d due at %s, want %s", k, time.Duration(d), time.Duration(want))
		}
	}
	for _, a := range spans {
		open := 0
		for _, b := range spans {
			if b.from <= a.from && a.from < b.to {
				open++
			}
		}
		if open > 2 {
			t.Errorf("%d sessions open at once, with 2 slots", open)
		}
	}
}

// Sessions on --request-rate without --concurrency (AIPerf's rate-centric
// mode): every turn takes a tick of the arrival process, never sent before
// it, no tick twice; a session's next turn, ready once its answer has
// come, takes the worker's next tick before a new session does; so with a
// server far faster than the ticks each session's turns sit on one
// worker's consecutive ticks (2 workers: 200 ms apart at 10/s).
func TestSessionsRateCentric(t *testing.T) {
	_, url := startSim(t, 2*time.Millisecond, time.Millisecond)
	dir := filepath.Join(t.TempDir(), "run")
	res := runCLI(t, time.Minute, "profile", "-m", "sim", "-u", url, "--streaming", "--isl", "16", "--osl", "4",
		"--conversation-num", "6", "--conversation-turn-mean", "3", "--request-rate", "10", "--arrival-pattern", "constant",
		"--workers", "2", "--random-seed", "5", "--artifact-dir", dir)
	r, err := result.Read(dir)
	if res.code != 0 || err != nil {
		t.Fatalf("exit %d, %v\n%s", res.code, err, res.stderr)
	}
	if r.Counts.OK != 18 {
		t.Fatalf("counts %+v, want 6 sessions of 3 turns", r.Counts)
	}
	recs := readRecords(t, dir)
	seen := map[int64]bool{}
	bySession := map[string][]record.Record{}
	for _, rec := range recs {
		tick := int64(100 * time.Millisecond)
		if rec.Due%tick != 0 || seen[rec.Due] || rec.Sent < rec.Due {
			t.Errorf("request %d: due %s (a tick is a multiple of 100 ms, each once), sent %s", rec.Index, time.Duration(rec.Due), time.Duration(rec.Sent))
		}
		seen[rec.Due] = true
		bySession[rec.SessionID] = append(bySession[rec.SessionID], rec)
	}
	for id, rs := range bySession {
		slices.SortFunc(rs, func(a, b record.Record) int { return a.Turn - b.Turn })
		for k := 1; k < len(rs); k++ {
			if rs[k].Sent < rs[k-1].End || rs[k].Worker != rs[0].Worker {
				t.Errorf("session %s turn %d sent before turn %d's answer, or on another worker", id, k, k-1)
			}
			if gap := time.Duration(rs[k].Due - rs[k-1].Due); gap != 200*time.Millisecond {
				t.Errorf("session %s turn %d took the tick %s after turn %d's: want the worker's next (200 ms)", id, k, gap, k-1)
			}
		}
	}
}

// --user-context-prompt-length with a multi_turn file: each conversation
// gets its own context before its first turn (so in its history), its
// ISL that many tokens more, the server counting what the client planned.
func TestMultiTurnFileUserContext(t *testing.T) {
	_, url := startSim(t, 2*time.Millisecond, time.Millisecond)
	runOf := func(extra ...string) []record.Record {
		dir := filepath.Join(t.TempDir(), "run")
		args := append([]string{"profile", "-m", "sim", "-u", url, "--streaming", "--osl", "6", "--input-file", "testdata/conversations.jsonl",
			"--custom-dataset-type", "multi_turn", "--concurrency", "2", "--random-seed", "3", "--use-server-token-count", "--artifact-dir", dir}, extra...)
		res := runCLI(t, time.Minute, args...)
		if res.code != 0 {
			t.Fatalf("exit %d\n%s", res.code, res.stderr)
		}
		recs := readRecords(t, dir)
		slices.SortFunc(recs, func(a, b record.Record) int { return a.Index - b.Index })
		return recs
	}
	plain, ctx := runOf(), runOf("--user-context-prompt-length", "40")
	if len(plain) != 6 || len(ctx) != 6 {
		t.Fatalf("%d and %d turns, want 6", len(plain), len(ctx))
	}
	for i := range ctx {
		if ctx[i].ServerISL != ctx[i].ISL {
			t.Errorf("turn %d: ISL %d, server %d", i, ctx[i].ISL, ctx[i].ServerISL)
		}
		if ctx[i].Turn == 0 && ctx[i].ISL != plain[i].ISL+40 {
			t.Errorf("first turn %d: ISL %d, want the conversation's %d + 40", i, ctx[i].ISL, plain[i].ISL)
		}
		if ctx[i].Turn > 0 && ctx[i].ISL <= plain[i].ISL {
			t.Errorf("turn %d: ISL %d, want the history's context in it (without: %d)", i, ctx[i].ISL, plain[i].ISL)
		}
	}
}

// Synthetic sessions with --num-prefix-prompts: every turn's prompt
// starts with one of the pool's prefixes (drawn per request, as AIPerf
// draws them), so the pool's prefixes recur across sessions and turns,
// each turn's ISL its history's and its own with the prefix, as the
// server counts it.
func TestSessionsWithPrefixPrompts(t *testing.T) {
	_, url := startSim(t, 2*time.Millisecond, time.Millisecond)
	dir := filepath.Join(t.TempDir(), "run")
	res := runCLI(t, time.Minute, "profile", "-m", "sim", "-u", url, "--streaming", "--isl", "16", "--osl", "4",
		"--conversation-num", "4", "--conversation-turn-mean", "2", "--num-prefix-prompts", "2", "--prefix-prompt-length", "32",
		"--concurrency", "2", "--random-seed", "5", "--use-server-token-count", "--artifact-dir", dir)
	if res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	recs := readRecords(t, dir)
	if len(recs) != 8 {
		t.Fatalf("%d turns, want 8", len(recs))
	}
	for _, r := range recs {
		if r.ServerISL != r.ISL || (r.Turn == 0 && r.ISL != 16+32) {
			t.Errorf("session %s turn %d: ISL %d (server %d); a first turn wants 16 + its 32-token prefix", r.SessionID, r.Turn, r.ISL, r.ServerISL)
		}
	}
}

// --num-warmup-sessions warms up with whole sessions (AIPerf's warmup
// tutorial: --session-turns-mean 5 --num-warmup-sessions 10): that many
// sessions of the profile's turns, history kept, left out of the metrics.
func TestWarmupSessions(t *testing.T) {
	_, url := startSim(t, time.Millisecond, time.Millisecond)
	dir := filepath.Join(t.TempDir(), "run")
	res := runCLI(t, time.Minute, "profile", "-m", "sim", "-u", url, "--streaming", "--session-turns-mean", "3",
		"--num-warmup-sessions", "2", "--request-count", "6", "--isl", "8", "--osl", "2", "--random-seed", "5", "--artifact-dir", dir)
	if res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	sessions := map[string][]int{}
	warm, prof := 0, 0
	for _, r := range readRecords(t, dir) {
		if r.Warmup {
			warm++
			sessions[r.SessionID] = append(sessions[r.SessionID], r.Turn)
		} else {
			prof++
		}
	}
	if warm != 6 || prof != 6 || len(sessions) != 2 {
		t.Fatalf("%d warmup requests in %d sessions (%v), %d profiling; want 2 sessions of 3 turns and 6", warm, len(sessions), sessions, prof)
	}
	for id, turns := range sessions {
		if len(turns) != 3 || turns[0] != 0 || turns[2] != 2 {
			t.Errorf("warmup session %s turns %v", id, turns)
		}
	}
	run, _ := result.Read(dir)
	if run.Counts.Requests != 6 || run.Counts.Warmup != 6 {
		t.Errorf("counts %+v", run.Counts)
	}
	res = runCLI(t, time.Minute, "profile", "-m", "sim", "-u", url, "--num-warmup-sessions", "2", "--warmup-request-count", "3", "--artifact-dir", t.TempDir())
	if res.code != ExitError || !strings.Contains(res.stderr, "--num-warmup-sessions and --warmup-request-count") {
		t.Errorf("both: exit %d %s", res.code, res.stderr)
	}
}
