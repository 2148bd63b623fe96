package sim

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// In engine mode the pacer writes each stream's tokens as the engine's
// steps make them: concurrent streams all finish with every token, each
// stream's truth has its first token and a gap for every later one, and
// GET /sim/engine counts a write lag for every token the pacer wrote.
func TestEngineModeStreamsThroughPacer(t *testing.T) {
	cfg, err := EngineConfig("")
	if err != nil {
		t.Fatal(err)
	}
	s := New(cfg)
	defer s.Close()
	srv := httptest.NewServer(s)
	defer srv.Close()
	const streams, tokens = 8, 12
	var wg sync.WaitGroup
	errs := make(chan error, streams)
	for i := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := streamReq("", tokens)
			body = body[strings.Index(body, "\r\n\r\n")+4:]
			req, _ := http.NewRequest("POST", srv.URL+"/v1/chat/completions", strings.NewReader(body))
			req.Header.Set("X-Request-ID", string(rune('a'+i)))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if n := strings.Count(string(b), `"content":"`) - 1; n != tokens || !strings.HasSuffix(string(b), "data: [DONE]\n\n") {
				errs <- io.ErrUnexpectedEOF
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	s.Settle(10 * time.Second) // a truth is kept just after its stream's last write
	truths := s.Truths()
	if len(truths) != streams {
		t.Fatalf("%d truths", len(truths))
	}
	for _, tr := range truths {
		if tr.Aborted || tr.FirstToken <= 0 || len(tr.Gaps) != tokens-1 {
			t.Fatalf("truth %s: aborted %v, first token %d ns, %d gaps", tr.ID, tr.Aborted, tr.FirstToken, len(tr.Gaps))
		}
	}
	resp, err := http.Get(srv.URL + "/sim/engine")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got struct {
		WriteLag     map[string]float64 `json:"write_lag"`
		StepWriteLag map[string]float64 `json:"step_write_lag"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	// Every chunk went through the pacer, one a token (the first carries
	// the role, the last the finish, usage and [DONE]).
	if n := got.WriteLag["n"]; n != streams*tokens || got.StepWriteLag["n"] == 0 || got.StepWriteLag["n"] > n {
		t.Fatalf("write lag %v, step write lag %v", got.WriteLag, got.StepWriteLag)
	}
}
