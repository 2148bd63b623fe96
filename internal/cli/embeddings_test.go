package cli

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image/jpeg"
	"image/png"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/endpoint"
	"github.com/aiperf-action/aiperf-action/internal/metrics"
	"github.com/aiperf-action/aiperf-action/internal/record"
	"github.com/aiperf-action/aiperf-action/internal/result"
	"github.com/aiperf-action/aiperf-action/internal/sim"
	"github.com/aiperf-action/aiperf-action/internal/tokenizer"
)

// Non-token endpoints end to end against serve: embeddings,
// nim_embeddings and image_generation, request latency the server's 10 ms,
// request throughput as inputs (images) a second, the server's prompt count
// equal to ours where it reports one, no token metrics; --streaming is
// refused before any load, naming the flag.
func TestEmbeddingsEndpoint(t *testing.T) {
	cfg := sim.DefaultConfig
	cfg.TTFT = 10 * time.Millisecond
	url := serveHandler(t, sim.New(cfg))
	for _, typ := range []string{"embeddings", "nim_embeddings", "chat_embeddings", "image_generation"} {
		dir := filepath.Join(t.TempDir(), "run")
		res := runCLI(t, time.Minute, "profile", "-m", "e5", "-u", url, "--endpoint-type", typ, "--concurrency", "2", "--request-count", "8",
			"--isl", "32", "--use-server-token-count", "--random-seed", "2", "--no-server-metrics", "--artifact-dir", dir)
		if res.code != 0 {
			t.Fatalf("%s: exit %d\n%s", typ, res.code, res.stderr)
		}
		run, err := result.Read(dir)
		if err != nil {
			t.Fatal(err)
		}
		if run.Counts.OK != 8 || run.Counts.Errors != 0 {
			t.Fatalf("%s: counts %+v", typ, run.Counts)
		}
		for _, r := range readRecords(t, dir) {
			if (typ != "image_generation" && r.ServerISL != r.ISL) || r.ISL != 32 || r.OSL != 0 {
				t.Errorf("%s: request %d: ISL %d (server %d), OSL %d", typ, r.Index, r.ISL, r.ServerISL, r.OSL)
			}
		}
		lat := run.Metrics[metrics.RequestLatency].Dist
		// The server answers 10 ms after arrival, on a Go timer: never early
		// (how late depends on the machine, so no upper bound but a gross one).
		t.Logf("%s: request latency p50 %.2f ms, %.1f inputs/s", typ, lat.P50, run.Metrics[metrics.RequestTput].Rate.Value)
		if lat.P50 < 10 || lat.P50 > 500 {
			t.Errorf("%s: request latency p50 %.2f ms, want at least the server's 10", typ, lat.P50)
		}
		for _, m := range []string{metrics.TTFT, metrics.OutputTput, metrics.ITL} {
			if _, ok := run.Metrics[m]; ok {
				t.Errorf("%s: a token metric %s", typ, m)
			}
		}
	}
	res := runCLI(t, time.Minute, "profile", "-m", "e5", "-u", url, "--endpoint-type", "embeddings", "--streaming", "--request-count", "2")
	if res.code != 2 || !strings.Contains(res.stderr, "--streaming") {
		t.Errorf("embeddings with --streaming: exit %d\n%s", res.code, res.stderr)
	}
}

// The rankings types against serve: synthetic queries and passages of
// the --rankings-* lengths, and an input file of AIPerf's named texts
// (query and passages), each sent in its API's shape and counted a query
// a request; a line without a query and a --rankings-* flag without a
// rankings type are refused before any request.
func TestRankingsEndpoints(t *testing.T) {
	cfg := sim.DefaultConfig
	cfg.TTFT = 5 * time.Millisecond
	s := sim.New(cfg)
	url, sink := captureBodies(t, s)
	bodies := map[string][]string{}
	collect := func() {
		for _, r := range sink.take() {
			bodies[r.path] = append(bodies[r.path], r.body)
		}
	}
	shape := map[string]struct{ path, query, passages string }{
		"nim_rankings":    {"/v1/ranking", `"query":{"text":`, `"passages":[{"text":`},
		"cohere_rankings": {"/v2/rerank", `"query":"`, `"documents":["`},
		"hf_tei_rankings": {"/rerank", `"query":"`, `"texts":["`},
	}
	file := filepath.Join(t.TempDir(), "rankings.jsonl")
	var lines strings.Builder
	for i := range 4 {
		fmt.Fprintf(&lines, `{"texts":[{"name":"query","contents":["what is topic %d?"]},{"name":"passages","contents":["passage one of %d","passage two of %d"]}]}`+"\n", i, i, i)
	}
	os.WriteFile(file, []byte(lines.String()), 0o644)
	for typ, sh := range shape {
		for _, src := range [][]string{
			{"--request-count", "6", "--rankings-passages-mean", "3", "--rankings-passages-prompt-token-mean", "20", "--rankings-query-prompt-token-mean", "8"},
			{"--request-count", "4", "--input-file", file, "--custom-dataset-type", "single_turn"},
		} {
			dir := filepath.Join(t.TempDir(), "run")
			args := append([]string{"profile", "-m", "rr", "-u", url, "--endpoint-type", typ, "--concurrency", "2", "--random-seed", "2", "--no-server-metrics", "--artifact-dir", dir}, src...)
			res := runCLI(t, time.Minute, args...)
			if res.code != 0 {
				t.Fatalf("%s %v: exit %d\n%s", typ, src, res.code, res.stderr)
			}
			run, err := result.Read(dir)
			if err != nil {
				t.Fatal(err)
			}
			fromFile := len(src) == 6
			want := 6
			if fromFile {
				want = 4
			}
			if run.Counts.OK != want || run.Counts.Errors != 0 {
				t.Fatalf("%s %v: counts %+v", typ, src, run.Counts)
			}
			for _, r := range readRecords(t, dir) {
				// (a file line's tokens: its query's and its passages', each counted alone)
				k := r.Index % 4
				fileISL := tokenizer.Count(fmt.Sprintf("what is topic %d?", k)) + tokenizer.Count(fmt.Sprintf("passage one of %d", k)) + tokenizer.Count(fmt.Sprintf("passage two of %d", k))
				if wantISL := map[bool]int{false: 8 + 3*20, true: fileISL}[fromFile]; r.ISL != wantISL || r.OSL != 0 {
					t.Errorf("%s: request %d: ISL %d, want %d; OSL %d", typ, r.Index, r.ISL, wantISL, r.OSL)
				}
			}
			if _, ok := run.Metrics[metrics.TTFT]; ok {
				t.Errorf("%s: a token metric", typ)
			}
			// Passages a second: a synthetic query ranks 3, a file's 2.
			perQuery := map[bool]float64{false: 3, true: 2}[fromFile]
			if it, rq := run.Metrics[metrics.ItemTput].Rate, run.Metrics[metrics.RequestTput].Rate; it == nil || it.Unit != "passages/sec" || math.Abs(it.Value/rq.Value-perQuery) > 1e-6 {
				t.Errorf("%s: item throughput %+v against %+v requests/s, want %g passages a query", typ, it, rq, perQuery)
			}
		}
		collect()
		got := bodies[sh.path]
		if len(got) != 10 {
			t.Fatalf("%s: %d requests at %s, want 10", typ, len(got), sh.path)
		}
		for i, b := range got {
			if !strings.Contains(b, sh.query) || !strings.Contains(b, sh.passages) {
				t.Errorf("%s: body %d not in its API's shape: %s", typ, i, b)
			}
		}
		if n := strings.Count(got[0], `{"text":`); typ == "nim_rankings" && n != 4 {
			t.Errorf("%s: a synthetic request with %d texts, want a query and 3 passages: %s", typ, n, got[0])
		}
		if !strings.Contains(strings.Join(got, "\n"), `passage two of 3`) {
			t.Errorf("%s: the file's passages were not sent", typ)
		}
	}
	bad := filepath.Join(t.TempDir(), "plain.jsonl")
	os.WriteFile(bad, []byte(`{"text": "no query here"}`+"\n"), 0o644)
	collect()
	before := len(bodies["/v1/ranking"])
	res := runCLI(t, time.Minute, "profile", "-m", "rr", "-u", url, "--endpoint-type", "nim_rankings", "--input-file", bad, "--request-count", "1")
	collect()
	after := len(bodies["/v1/ranking"])
	if res.code != 2 || !strings.Contains(res.stderr, "plain.jsonl: --endpoint-type nim_rankings needs each line's query and passages") || after != before {
		t.Errorf("a line without a query: exit %d, %d requests sent\n%s", res.code, after-before, res.stderr)
	}
	res = runCLI(t, time.Minute, "profile", "-m", "rr", "-u", url, "--rankings-passages-mean", "3", "--request-count", "1")
	if res.code != 2 || !strings.Contains(res.stderr, "the --rankings-* flags shape a rankings endpoint's requests") {
		t.Errorf("--rankings-passages-mean with chat: exit %d\n%s", res.code, res.stderr)
	}
}

// A random_pool folder (GenAI-Perf's rankings layout: queries.jsonl and
// passages.jsonl): each request draws a line of each pool, a pool's
// plain texts named after its file, so the queries pool gives the query
// and the passages pool the passages; the same folder with chat sends the
// texts joined as one prompt.
func TestRandomPoolFolder(t *testing.T) {
	cfg := sim.DefaultConfig
	cfg.TTFT, cfg.ITL = 2*time.Millisecond, time.Millisecond
	s := sim.New(cfg)
	url, sink := captureBodies(t, s)
	dir := filepath.Join(t.TempDir(), "rankings_jsonl")
	os.Mkdir(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "queries.jsonl"), []byte(`{"text": "what is q1?"}`+"\n"+`{"text": "what is q2?"}`+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "passages.jsonl"), []byte(`{"text": "passage alpha"}`+"\n"+`{"text": "passage beta"}`+"\n"+`{"text": "passage gamma"}`+"\n"), 0o644)
	run := func(typ string) (*result.Run, []record.Record) {
		t.Helper()
		out := filepath.Join(t.TempDir(), "run")
		res := runCLI(t, time.Minute, "profile", "-m", "rr", "-u", url, "--endpoint-type", typ, "--input-file", dir, "--custom-dataset-type", "random_pool",
			"--request-count", "12", "--osl", "3", "--random-seed", "4", "--no-server-metrics", "--artifact-dir", out)
		if res.code != 0 {
			t.Fatalf("%s: exit %d\n%s", typ, res.code, res.stderr)
		}
		r, err := result.Read(out)
		if err != nil || r.Counts.OK != 12 {
			t.Fatalf("%s: %v, counts %+v", typ, err, r.Counts)
		}
		return r, readRecords(t, out)
	}
	_, recs := run("nim_rankings")
	got := sink.bodies()
	seen := map[string]bool{}
	for _, b := range got {
		var req struct {
			Query    struct{ Text string }   `json:"query"`
			Passages []struct{ Text string } `json:"passages"`
		}
		if err := json.Unmarshal([]byte(b), &req); err != nil || !strings.HasPrefix(req.Query.Text, "what is q") || len(req.Passages) != 1 || !strings.HasPrefix(req.Passages[0].Text, "passage ") {
			t.Errorf("a request not one query and one passage: %s", b)
		}
		seen[req.Query.Text+"|"+req.Passages[0].Text] = true
	}
	if len(seen) < 3 {
		t.Errorf("12 draws made only %d pairs of 6", len(seen))
	}
	for _, r := range recs {
		if r.ISL != tokenizer.Count("what is q1?")+tokenizer.Count("passage alpha") && r.ISL != tokenizer.Count("what is q1?")+tokenizer.Count("passage gamma") {
			t.Errorf("request %d: ISL %d, want a query's and a passage's tokens", r.Index, r.ISL)
		}
	}
	run("chat")
	bodies := sink.bodies()
	if len(bodies) != 12 || !strings.Contains(bodies[0], `what is q`) || !strings.Contains(bodies[0], `passage `) {
		t.Errorf("chat over the folder: %d bodies, first %s", len(bodies), bodies[0])
	}
}

// Images in chat requests: synthetic ones of the --image-* size and
// format, as image_url content parts after the text, and an input file's
// "image"/"images" (a file sent as a data URL of its bytes, a URL as it
// is); a missing image file is refused, with its line, before any load.
func TestChatImages(t *testing.T) {
	cfg := sim.DefaultConfig
	cfg.TTFT, cfg.ITL = 2*time.Millisecond, time.Millisecond
	s := sim.New(cfg)
	url, sink := captureBodies(t, s)
	type part struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		ImageURL struct {
			URL string `json:"url"`
		} `json:"image_url"`
	}
	parts := func(body string) []part {
		var req struct {
			Messages []struct {
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		var ps []part
		if err := json.Unmarshal([]byte(body), &req); err != nil || len(req.Messages) != 1 || json.Unmarshal(req.Messages[0].Content, &ps) != nil {
			t.Fatalf("not a chat with content parts: %.300s", body)
		}
		return ps
	}
	// (Whole answers: a streamed one keeps its connection in serve's own
	// reader, past this wrapper.)
	res := runCLI(t, time.Minute, "profile", "-m", "vlm", "-u", url, "--request-count", "3", "--isl", "12", "--osl", "2",
		"--image-width-mean", "64", "--image-height-mean", "48", "--image-format", "jpeg", "--image-batch-size", "2", "--random-seed", "1",
		"--no-server-metrics", "--artifact-dir", filepath.Join(t.TempDir(), "run"))
	if res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	got := sink.bodies()
	if len(got) != 3 {
		t.Fatalf("%d requests", len(got))
	}
	for _, b := range got {
		ps := parts(b)
		if len(ps) != 3 || ps[0].Type != "text" || ps[1].Type != "image_url" || ps[2].Type != "image_url" {
			t.Fatalf("parts %+v", ps)
		}
		data, ok := strings.CutPrefix(ps[1].ImageURL.URL, "data:image/jpeg;base64,")
		raw, err := base64.StdEncoding.DecodeString(data)
		if !ok || err != nil {
			t.Fatalf("not a JPEG data URL: %.60s", ps[1].ImageURL.URL)
		}
		img, err := jpeg.DecodeConfig(bytes.NewReader(raw))
		if err != nil || img.Width != 64 || img.Height != 48 {
			t.Errorf("image %dx%d (%v), want 64x48", img.Width, img.Height, err)
		}
	}
	if parts(got[0])[1].ImageURL.URL == parts(got[1])[1].ImageURL.URL {
		t.Error("two requests sent the same image")
	}
	dir := t.TempDir()
	pic := []byte("\x89PNG\r\n\x1a\n not really, but bytes")
	os.WriteFile(filepath.Join(dir, "cat.png"), pic, 0o644)
	file := filepath.Join(dir, "vqa.jsonl")
	os.WriteFile(file, []byte(`{"text": "what is this?", "image": "cat.png"}`+"\n"+`{"text": "and this?", "images": ["https://example.invalid/dog.jpg", "cat.png"]}`+"\n"), 0o644)
	res = runCLI(t, time.Minute, "profile", "-m", "vlm", "-u", url, "--request-count", "2", "--osl", "2", "--input-file", file,
		"--custom-dataset-type", "single_turn", "--no-server-metrics", "--artifact-dir", filepath.Join(t.TempDir(), "run"))
	if res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	got = sink.bodies()
	slices.Sort(got) // ("and this?" first)
	want := "data:image/png;base64," + base64.StdEncoding.EncodeToString(pic)
	if ps := parts(got[0]); len(ps) != 3 || ps[1].ImageURL.URL != "https://example.invalid/dog.jpg" || ps[2].ImageURL.URL != want {
		t.Errorf("the line's images: %+v", ps)
	}
	if ps := parts(got[1]); len(ps) != 2 || ps[0].Text != "what is this?" || ps[1].ImageURL.URL != want {
		t.Errorf("the line's image: %+v", ps)
	}
	os.WriteFile(file, []byte(`{"text": "x", "image": "missing.png"}`+"\n"), 0o644)
	res = runCLI(t, time.Minute, "profile", "-m", "vlm", "-u", url, "--request-count", "1", "--input-file", file, "--custom-dataset-type", "single_turn")
	n := len(sink.bodies())
	if res.code != 2 || !strings.Contains(res.stderr, `vqa.jsonl:1: image "missing.png": no such file`) || n != 0 {
		t.Errorf("a missing image: exit %d, %d sent\n%s", res.code, n, res.stderr)
	}
}

// image_retrieval (NIM's /v1/infer) sends each request's images alone,
// synthetic or an input file's, and counts an image an item; without
// images it is refused.
func TestImageRetrieval(t *testing.T) {
	cfg := sim.DefaultConfig
	cfg.TTFT = 3 * time.Millisecond
	s := sim.New(cfg)
	url, sink := captureBodies(t, s)
	dir := filepath.Join(t.TempDir(), "run")
	res := runCLI(t, time.Minute, "profile", "-m", "page-elements", "-u", url, "--endpoint-type", "image_retrieval", "--request-count", "4",
		"--image-width-mean", "32", "--image-height-mean", "32", "--image-batch-size", "2", "--concurrency", "2", "--no-server-metrics", "--artifact-dir", dir)
	if res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	r, err := result.Read(dir)
	if err != nil || r.Counts.OK != 4 {
		t.Fatalf("%v, counts %+v", err, r.Counts)
	}
	for _, rec := range readRecords(t, dir) {
		if rec.ISL != 0 || rec.OSL != 0 {
			t.Errorf("request %d: ISL %d, OSL %d; an image request has neither", rec.Index, rec.ISL, rec.OSL)
		}
	}
	for _, got := range sink.take() {
		b := got.path + " " + got.body
		if !strings.HasPrefix(b, `/v1/infer {"input":[{"type":"image_url","url":"data:image/png;base64,`) || strings.Count(b, `"image_url"`) != 2 || strings.Contains(b, `"model"`) {
			t.Errorf("not an image retrieval request of two images: %.120s", b)
		}
	}
	res = runCLI(t, time.Minute, "profile", "-m", "pe", "-u", url, "--endpoint-type", "image_retrieval", "--request-count", "1")
	if res.code != 2 || !strings.Contains(res.stderr, "--endpoint-type image_retrieval sends images") {
		t.Errorf("no images: exit %d\n%s", res.code, res.stderr)
	}
}

// A bodySink keeps every request's path and body, in order of arrival.
// (Whole answers only: a streamed one keeps its connection in serve's own
// reader, past the wrapper.)
type bodySink struct {
	mu  sync.Mutex
	got []sentBody
}

type sentBody struct{ path, body string }

// captureBodies serves h on loopback, keeping each request's body.
func captureBodies(t *testing.T, h http.Handler) (string, *bodySink) {
	t.Helper()
	sink := &bodySink{}
	url := serveHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		sink.mu.Lock()
		sink.got = append(sink.got, sentBody{r.URL.Path, string(b)})
		sink.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		h.ServeHTTP(w, r)
	}))
	return url, sink
}

// take returns what came since the last take.
func (s *bodySink) take() []sentBody {
	s.mu.Lock()
	defer s.mu.Unlock()
	got := s.got
	s.got = nil
	return got
}

// bodies is take's bodies alone.
func (s *bodySink) bodies() []string {
	var out []string
	for _, g := range s.take() {
		out = append(out, g.body)
	}
	return out
}

// Audio in chat requests: synthetic WAV clips of the --audio-* length,
// rate and depth, and an input file's "audio"/"audios" (a .wav file read
// and encoded, AIPerf's "wav,<base64>" as it is), as input_audio parts;
// and a line's "video", a video_url part.
func TestChatAudio(t *testing.T) {
	cfg := sim.DefaultConfig
	cfg.TTFT, cfg.ITL = 2*time.Millisecond, time.Millisecond
	url, sink := captureBodies(t, sim.New(cfg))
	type clip struct{ Data, Format string }
	clips := func(body string) []clip {
		var req struct {
			Messages []struct {
				Content []struct {
					Type       string `json:"type"`
					InputAudio clip   `json:"input_audio"`
				} `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal([]byte(body), &req); err != nil || len(req.Messages) != 1 {
			t.Fatalf("not a chat with content parts: %.200s", body)
		}
		var out []clip
		for _, p := range req.Messages[0].Content {
			if p.Type == "input_audio" {
				out = append(out, p.InputAudio)
			}
		}
		return out
	}
	res := runCLI(t, time.Minute, "profile", "-m", "asr", "-u", url, "--request-count", "2", "--isl", "8", "--osl", "2",
		"--audio-length-mean", "0.5", "--audio-sample-rates", "8", "--audio-depths", "16", "--random-seed", "1", "--no-server-metrics", "--artifact-dir", filepath.Join(t.TempDir(), "run"))
	if res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	got := sink.bodies()
	if len(got) != 2 {
		t.Fatalf("%d requests", len(got))
	}
	for _, b := range got {
		cs := clips(b)
		if len(cs) != 1 || cs[0].Format != "wav" {
			t.Fatalf("clips %+v", cs)
		}
		wav, err := base64.StdEncoding.DecodeString(cs[0].Data)
		if err != nil || len(wav) != 44+4000*2 || string(wav[:4]) != "RIFF" || string(wav[8:12]) != "WAVE" ||
			binary.LittleEndian.Uint32(wav[24:28]) != 8000 || binary.LittleEndian.Uint16(wav[34:36]) != 16 {
			t.Errorf("not 0.5 s of 16-bit 8 kHz WAV: %d bytes, %v", len(wav), err)
		}
	}
	dir := t.TempDir()
	wav := []byte("RIFF....WAVEfmt not a real clip")
	os.WriteFile(filepath.Join(dir, "q.wav"), wav, 0o644)
	file := filepath.Join(dir, "asr.jsonl")
	os.WriteFile(filepath.Join(dir, "clip.mp4"), []byte("....ftypmp42"), 0o644)
	os.WriteFile(file, []byte(`{"text": "transcribe", "audio": "q.wav"}`+"\n"+`{"audios": ["wav,UklGRg=="]}`+"\n"+`{"text": "what happens?", "video": "clip.mp4"}`+"\n"), 0o644)
	res = runCLI(t, time.Minute, "profile", "-m", "asr", "-u", url, "--request-count", "3", "--osl", "2", "--input-file", file,
		"--custom-dataset-type", "single_turn", "--no-server-metrics", "--artifact-dir", filepath.Join(t.TempDir(), "run"))
	if res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	got = sink.bodies()
	slices.Sort(got)
	all := strings.Join(got, "\n")
	if !strings.Contains(all, `"data":"`+base64.StdEncoding.EncodeToString(wav)+`","format":"wav"`) || !strings.Contains(all, `"data":"UklGRg==","format":"wav"`) {
		t.Errorf("the file's audio was not sent: %.400s", all)
	}
	if !strings.Contains(all, `{"type":"video_url","video_url":{"url":"data:video/mp4;base64,`+base64.StdEncoding.EncodeToString([]byte("....ftypmp42"))+`"}}`) {
		t.Errorf("the file's video was not sent as a video_url part: %.600s", all)
	}
}

// audio_transcription uploads each request's clip as a multipart form's
// "file" with the model, and counts a clip a transcript; without audio it
// is refused.
func TestAudioTranscription(t *testing.T) {
	cfg := sim.DefaultConfig
	cfg.TTFT = 3 * time.Millisecond
	url, sink := captureBodies(t, sim.New(cfg))
	dir := filepath.Join(t.TempDir(), "run")
	res := runCLI(t, time.Minute, "profile", "-m", "whisper", "-u", url, "--endpoint-type", "audio_transcription", "--request-count", "3",
		"--audio-length-mean", "1", "--audio-sample-rates", "16", "--extra-inputs", "language:en", "--no-server-metrics", "--artifact-dir", dir)
	if res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	r, err := result.Read(dir)
	if err != nil || r.Counts.OK != 3 {
		t.Fatalf("%v, counts %+v", err, r.Counts)
	}
	for _, got := range sink.take() {
		req := httptest.NewRequest("POST", got.path, strings.NewReader(got.body))
		req.Header.Set("Content-Type", endpoint.AudioTranscription{}.ContentType())
		if got.path != "/v1/audio/transcriptions" || req.ParseMultipartForm(1<<20) != nil {
			t.Fatalf("not a multipart upload to the transcriptions path: %s %.100s", got.path, got.body)
		}
		f, hdr, err := req.FormFile("file")
		if err != nil || req.FormValue("model") != "whisper" || req.FormValue("language") != "en" || hdr.Filename != "audio.wav" {
			t.Fatalf("form %v, file %v", req.MultipartForm.Value, err)
		}
		data, _ := io.ReadAll(f)
		if len(data) != 44+16000*2 {
			t.Errorf("the clip is %d bytes, want 1 s of 16 kHz 16-bit WAV", len(data))
		}
	}
	res = runCLI(t, time.Minute, "profile", "-m", "w", "-u", url, "--endpoint-type", "audio_transcriptions", "--request-count", "1")
	if res.code != 2 || !strings.Contains(res.stderr, "--endpoint-type audio_transcription uploads audio") {
		t.Errorf("no audio: exit %d\n%s", res.code, res.stderr)
	}
}

// raw_payload: each line a whole request body, sent as it is to the
// endpoint type's path and read as its answers; ISL the messages' text,
// max tokens the payload's; a payload whose "stream" disagrees with
// --streaming is refused with its line.
func TestRawPayload(t *testing.T) {
	cfg := sim.DefaultConfig
	cfg.TTFT, cfg.ITL = 2*time.Millisecond, time.Millisecond
	url, sink := captureBodies(t, sim.New(cfg))
	file := filepath.Join(t.TempDir(), "captured.jsonl")
	lines := []string{
		`{"model": "prod-model", "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello there"}], "max_tokens": 5, "temperature": 0.2, "seed": 7}`,
		`{"model": "prod-model", "messages": [{"role": "user", "content": [{"type": "text", "text": "one two three"}]}], "max_completion_tokens": 3}`,
	}
	os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	dir := filepath.Join(t.TempDir(), "run")
	res := runCLI(t, time.Minute, "profile", "-m", "sim", "-u", url, "--input-file", file, "--custom-dataset-type", "raw_payload",
		"--request-count", "2", "--use-server-token-count", "--no-server-metrics", "--artifact-dir", dir)
	if res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	got := sink.bodies()
	slices.Sort(got)
	for i, l := range []string{lines[0], lines[1]} {
		var want bytes.Buffer
		json.Compact(&want, []byte(l))
		if len(got) != 2 || got[i] != want.String() {
			t.Errorf("body %d: %v, want the line as it is: %s", i, got, want.String())
		}
	}
	recs := readRecords(t, dir)
	slices.SortFunc(recs, func(a, b record.Record) int { return a.Index - b.Index })
	if len(recs) != 2 || recs[0].MaxTokens != 5 || recs[1].MaxTokens != 3 || recs[0].OSL != 5 || recs[1].OSL != 3 ||
		recs[0].ISL != recs[0].ServerISL || recs[1].ISL != tokenizer.Count("one two three") {
		t.Errorf("records %+v", recs)
	}
	os.WriteFile(file, []byte(`{"messages": [{"role": "user", "content": "x"}], "stream": true}`+"\n"), 0o644)
	res = runCLI(t, time.Minute, "profile", "-m", "sim", "-u", url, "--input-file", file, "--custom-dataset-type", "raw_payload", "--request-count", "1")
	if res.code != 2 || !strings.Contains(res.stderr, `captured.jsonl:1: the payload's "stream" is true and --streaming is false`) || len(sink.bodies()) != 0 {
		t.Errorf("a stream payload without --streaming: exit %d\n%s", res.code, res.stderr)
	}
}

// --endpoint-type raw: raw payloads posted to the URL as given, their
// answers' text found where a known API puts it, whole and streamed, or
// at --response-field.
func TestRawEndpoint(t *testing.T) {
	cfg := sim.DefaultConfig
	cfg.TTFT, cfg.ITL = 2*time.Millisecond, time.Millisecond
	_, base := startSimWith(t, cfg)
	file := filepath.Join(t.TempDir(), "p.jsonl")
	for _, c := range []struct {
		url, line string
		args      []string
	}{
		{base + "/v1/chat/completions", `{"model": "sim", "messages": [{"role": "user", "content": "a b c"}], "max_tokens": 4, "ignore_eos": true}`, nil},
		{base + "/v1/chat/completions", `{"model": "sim", "messages": [{"role": "user", "content": "a b c"}], "max_tokens": 4, "ignore_eos": true, "stream": true}`, []string{"--streaming"}},
		{base + "/v1/completions", `{"model": "sim", "prompt": "a b c", "max_tokens": 4, "ignore_eos": true, "stream": true}`, []string{"--streaming"}},
		{base + "/generate", `{"text": "a b c", "sampling_params": {"max_new_tokens": 4, "ignore_eos": true}}`, []string{"--response-field", "text"}},
	} {
		os.WriteFile(file, []byte(c.line+"\n"), 0o644)
		dir := filepath.Join(t.TempDir(), "run")
		args := append([]string{"profile", "-m", "sim", "-u", c.url, "--endpoint-type", "raw", "--input-file", file, "--custom-dataset-type", "raw_payload",
			"--request-count", "2", "--no-server-metrics", "--artifact-dir", dir}, c.args...)
		res := runCLI(t, time.Minute, args...)
		if res.code != 0 {
			t.Fatalf("%s %v: exit %d\n%s", c.url, c.args, res.code, res.stderr)
		}
		for _, r := range readRecords(t, dir) {
			if r.ErrKind != "" || r.OSL != 4 {
				t.Errorf("%s %v: request %d: %s, OSL %d; want 4 tokens", c.url, c.args, r.Index, r.ErrKind, r.OSL)
			}
		}
	}
	res := runCLI(t, time.Minute, "profile", "-m", "sim", "-u", base, "--endpoint-type", "raw", "--request-count", "1")
	if res.code != 2 || !strings.Contains(res.stderr, "it needs --custom-dataset-type raw_payload") {
		t.Errorf("raw without payloads: exit %d\n%s", res.code, res.stderr)
	}
}

// startSimWith serves a simulator of cfg on loopback.
func startSimWith(t *testing.T, cfg sim.Config) (*sim.Server, string) {
	t.Helper()
	s := sim.New(cfg)
	return s, serveHandler(t, s)
}

// image_edit uploads each request's prompt and image as a multipart
// form ("image" a file, an http(s) image SGLang's "url" field), and
// counts the edited images.
func TestImageEdit(t *testing.T) {
	cfg := sim.DefaultConfig
	cfg.TTFT = 3 * time.Millisecond
	url, sink := captureBodies(t, sim.New(cfg))
	dir := filepath.Join(t.TempDir(), "run")
	res := runCLI(t, time.Minute, "profile", "-m", "flux", "-u", url, "--endpoint-type", "image_edit", "--request-count", "2", "--isl", "12",
		"--image-width-mean", "24", "--image-height-mean", "16", "--no-server-metrics", "--artifact-dir", dir)
	if res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	if r, err := result.Read(dir); err != nil || r.Counts.OK != 2 {
		t.Fatalf("%v, counts %+v", err, r.Counts)
	}
	for _, got := range sink.take() {
		req := httptest.NewRequest("POST", got.path, strings.NewReader(got.body))
		req.Header.Set("Content-Type", endpoint.ImageEdit{}.ContentType())
		if got.path != "/v1/images/edits" || req.ParseMultipartForm(1<<20) != nil {
			t.Fatalf("not a multipart upload to the edits path: %s", got.path)
		}
		f, hdr, err := req.FormFile("image")
		if err != nil || req.FormValue("model") != "flux" || tokenizer.Count(req.FormValue("prompt")) != 12 || hdr.Filename != "image.png" {
			t.Fatalf("form %v, image %v", req.MultipartForm.Value, err)
		}
		if cfg, err := png.DecodeConfig(f); err != nil || cfg.Width != 24 || cfg.Height != 16 {
			t.Errorf("the image: %+v, %v", cfg, err)
		}
	}
}

// video_generation submits the prompt as a form, polls the job until it
// is completed, and times the request to the answer that says so: never
// less than serve's 4 × TTFT of generation.
func TestVideoGeneration(t *testing.T) {
	cfg := sim.DefaultConfig
	cfg.TTFT = 50 * time.Millisecond
	url, sink := captureBodies(t, sim.New(cfg))
	dir := filepath.Join(t.TempDir(), "run")
	res := runCLI(t, time.Minute, "profile", "-m", "wan", "-u", url, "--endpoint-type", "video_generation", "--request-count", "2", "--isl", "10",
		"--extra-inputs", "size:640x360", "--extra-inputs", "seconds:4", "--no-server-metrics", "--artifact-dir", dir)
	if res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	r, err := result.Read(dir)
	if err != nil || r.Counts.OK != 2 {
		t.Fatalf("%v, counts %+v", err, r.Counts)
	}
	if lat := r.Metrics[metrics.RequestLatency].Dist; lat.Min < 200 {
		t.Errorf("request latency min %.1f ms: shorter than the job's 200 ms", lat.Min)
	}
	posts, polls := 0, 0
	for _, got := range sink.take() {
		switch {
		case got.path == "/v1/videos":
			posts++
			req := httptest.NewRequest("POST", got.path, strings.NewReader(got.body))
			req.Header.Set("Content-Type", endpoint.VideoGeneration{}.ContentType())
			if req.ParseMultipartForm(1<<20) != nil || req.FormValue("model") != "wan" || req.FormValue("size") != "640x360" || req.FormValue("seconds") != "4" || req.FormValue("prompt") == "" {
				t.Errorf("a submission not of the model, prompt and extra inputs: %.200s", got.body)
			}
		case strings.HasPrefix(got.path, "/v1/videos/video_"):
			polls++
		default:
			t.Errorf("a request to %s", got.path)
		}
	}
	if posts != 2 || polls < 2 {
		t.Errorf("%d submissions and %d polls, want 2 and some", posts, polls)
	}
}

// inputs_json replays an inputs.json: a run's own, sent again as it is,
// gives the same bodies in the same order.
func TestInputsJSONReplay(t *testing.T) {
	cfg := sim.DefaultConfig
	cfg.TTFT, cfg.ITL = 2*time.Millisecond, time.Millisecond
	url, sink := captureBodies(t, sim.New(cfg))
	first := filepath.Join(t.TempDir(), "run")
	res := runCLI(t, time.Minute, "profile", "-m", "sim", "-u", url, "--request-count", "5", "--isl", "12", "--osl", "3",
		"--extra-inputs", "ignore_eos:true", "--warmup-request-count", "2", "--random-seed", "9", "--no-server-metrics", "--artifact-dir", first)
	if res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	sent := sink.bodies()
	dir := filepath.Join(t.TempDir(), "replay")
	res = runCLI(t, time.Minute, "profile", "-m", "sim", "-u", url, "--input-file", filepath.Join(first, "inputs.json"), "--custom-dataset-type", "inputs_json",
		"--request-count", "5", "--no-server-metrics", "--artifact-dir", dir)
	if res.code != 0 {
		t.Fatalf("replay: exit %d\n%s", res.code, res.stderr)
	}
	again := sink.bodies()
	if len(sent) != 7 || len(again) != 5 {
		t.Fatalf("%d bodies then %d, want 2 warmup + 5, then the 5", len(sent), len(again))
	}
	a, b := slices.Clone(sent[2:]), slices.Clone(again)
	slices.Sort(a)
	slices.Sort(b)
	if !slices.Equal(a, b) {
		t.Errorf("the replay sent other bodies:\n%v\n%v", a, b)
	}
	for _, r := range readRecords(t, dir) {
		if r.OSL != 3 || r.ISL != 12 {
			t.Errorf("replayed request %d: ISL %d, OSL %d, want 12 and 3", r.Index, r.ISL, r.OSL)
		}
	}
}

// A raw_payload folder (AIPerf's directory mode): each .jsonl file one
// conversation (by name), each line a turn's body, sent as it is after the
// previous turn's answer, with no history added; found without
// --custom-dataset-type too; other files ignored.
func TestRawPayloadFolder(t *testing.T) {
	cfg := sim.DefaultConfig
	cfg.TTFT, cfg.ITL = 2*time.Millisecond, time.Millisecond
	url, sink := captureBodies(t, sim.New(cfg))
	folder := t.TempDir()
	convs := map[string][]string{
		"session_001.jsonl": {`{"messages": [{"role": "user", "content": "What is Python?"}], "model": "m", "max_tokens": 4}`,
			`{"messages": [{"role": "user", "content": "What is Python?"}, {"role": "assistant", "content": "A language."}, {"role": "user", "content": "Show hello world."}], "model": "m", "max_tokens": 6}`},
		"session_002.jsonl": {`{"messages": [{"role": "user", "content": "Explain REST."}], "model": "m", "max_tokens": 3}`},
	}
	for name, lines := range convs {
		os.WriteFile(filepath.Join(folder, name), []byte(strings.Join(lines, "\n")+"\n\n"), 0o644)
	}
	os.WriteFile(filepath.Join(folder, "README.txt"), []byte("not a conversation"), 0o644)
	for _, typ := range [][]string{{"--custom-dataset-type", "raw_payload"}, nil} {
		dir := filepath.Join(t.TempDir(), "run")
		args := append([]string{"profile", "-m", "sim", "-u", url, "--input-file", folder, "--concurrency", "1", "--no-server-metrics", "--artifact-dir", dir}, typ...)
		res := runCLI(t, time.Minute, args...)
		if res.code != 0 {
			t.Fatalf("%v: exit %d\n%s", typ, res.code, res.stderr)
		}
		got := sink.bodies()
		var want []string
		for _, name := range []string{"session_001.jsonl", "session_002.jsonl"} {
			for _, l := range convs[name] {
				var c bytes.Buffer
				json.Compact(&c, []byte(l))
				want = append(want, c.String())
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%v: bodies\n%q\nwant, in order, as they are:\n%q", typ, got, want)
		}
		recs := readRecords(t, dir)
		slices.SortFunc(recs, func(a, b record.Record) int { return a.Index - b.Index })
		if len(recs) != 3 || recs[0].SessionID != recs[1].SessionID || recs[1].Turn != 1 || recs[0].MaxTokens != 4 || recs[1].MaxTokens != 6 ||
			recs[1].ISL != tokenizer.Count("What is Python?")+tokenizer.Count("A language.")+tokenizer.Count("Show hello world.") || recs[1].Sent < recs[0].End {
			t.Errorf("%v: records %+v", typ, recs)
		}
	}
	empty := t.TempDir()
	res := runCLI(t, time.Minute, "profile", "-m", "sim", "-u", url, "--input-file", empty, "--custom-dataset-type", "raw_payload", "--request-count", "1")
	if res.code != 2 || !strings.Contains(res.stderr, "no .jsonl files") {
		t.Errorf("an empty folder: exit %d\n%s", res.code, res.stderr)
	}
}

// AIPerf's --batch-size-text (-b, --prompt-batch-size) for embeddings:
// each request's "input" a list of that many synthetic texts, each its own
// draw (so not all alike), the request's input tokens theirs together,
// and the item throughput (inputs/s) that many times the request
// throughput. Another endpoint type, or an input file, is refused by name
// before any load.
func TestEmbeddingsPromptBatch(t *testing.T) {
	cfg := sim.DefaultConfig
	cfg.TTFT = 2 * time.Millisecond
	url, sink := captureBodies(t, sim.New(cfg))
	for _, flag := range []string{"--batch-size-text", "-b"} {
		dir := filepath.Join(t.TempDir(), "run")
		res := runCLI(t, time.Minute, "profile", "-m", "e5", "-u", url, "--endpoint-type", "embeddings", "--concurrency", "2", "--request-count", "6",
			"--isl", "16", "--isl-stddev", "4", flag, "4", "--random-seed", "3", "--no-server-metrics", "--artifact-dir", dir)
		if res.code != 0 {
			t.Fatalf("%s: exit %d\n%s", flag, res.code, res.stderr)
		}
		n := 0
		for _, sb := range sink.take() {
			if sb.path != "/v1/embeddings" {
				continue
			}
			n++
			var body struct{ Input []string }
			if err := json.Unmarshal([]byte(sb.body), &body); err != nil || len(body.Input) != 4 {
				t.Fatalf("%s: body %.300s (%v)", flag, sb.body, err)
			}
			if len(slices.Compact(slices.Sorted(slices.Values(body.Input)))) != 4 {
				t.Errorf("%s: the inputs are not each their own: %q", flag, body.Input)
			}
		}
		run, err := result.Read(dir)
		if err != nil {
			t.Fatal(err)
		}
		if n != 6 || run.Counts.OK != 6 {
			t.Fatalf("%s: %d bodies, counts %+v", flag, n, run.Counts)
		}
		isls := map[int]bool{}
		for _, r := range readRecords(t, dir) {
			isls[r.ISL] = true
			if r.Items != 4 || r.ISL < 4*8 || r.ISL > 4*24 {
				t.Errorf("%s: request %d: %d items, ISL %d", flag, r.Index, r.Items, r.ISL)
			}
		}
		if len(isls) < 2 {
			t.Errorf("%s: every request had ISL %v: the inputs' lengths were not drawn", flag, isls)
		}
		items, reqs := run.Metrics[metrics.ItemTput].Rate.Value, run.Metrics[metrics.RequestTput].Rate.Value
		if math.Abs(items/reqs-4) > 1e-9 {
			t.Errorf("%s: %.2f inputs/s against %.2f requests/s; want 4 times", flag, items, reqs)
		}
	}
	for _, c := range [][]string{
		{"--endpoint-type", "chat", "--batch-size-text", "2"},
		{"--endpoint-type", "embeddings", "--prompt-batch-size", "0"},
	} {
		res := runCLI(t, time.Minute, append([]string{"profile", "-m", "e5", "-u", url, "--request-count", "2", "--artifact-dir", t.TempDir()}, c...)...)
		if res.code != ExitError || !strings.Contains(res.stderr, "--prompt-batch-size") || len(sink.take()) != 0 {
			t.Errorf("%v: exit %d\n%s", c, res.code, res.stderr)
		}
	}
}
