package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/record"
	"github.com/aiperf-action/aiperf-action/internal/result"
	"github.com/aiperf-action/aiperf-action/internal/sim"
)

// TGI's, SGLang's and Triton's native generate APIs end to end against
// serve, streamed (both client paths) and whole: TGI's stream path, one
// token an event and the whole text only in the last (not counted twice);
// SGLang's cumulative events, each new part counted once; Triton's
// /v2/models/{model}/generate_stream with the model in the path.
func TestNativeGenerateEndpoints(t *testing.T) {
	cfg := sim.DefaultConfig
	cfg.TTFT, cfg.ITL = 12*time.Millisecond, 3*time.Millisecond
	url := serveHandler(t, sim.New(cfg))
	for _, typ := range []string{"huggingface_generate", "sglang_generate", "triton_generate"} {
		eachEndpointRun(t, typ, url, 6, []string{"-m", "tgi", "--endpoint-type", typ,
			"--concurrency", "2", "--request-count", "6", "--isl", "20", "--osl", "9",
			"--extra-inputs", "ignore_eos:true", "--random-seed", "6"},
			func(t *testing.T, er endpointRun, run *result.Run, recs []record.Record) {
				if typ == "triton_generate" { // (Triton reports no counts)
					for i := range recs {
						recs[i].ServerOSL = recs[i].OSL
					}
				}
				wantTokens(t, recs, 9, 0, 20, typ == "sglang_generate") // (nor TGI a prompt count)
				if !er.stream {
					return
				}
				for _, r := range recs {
					if len(r.Chunks) != 9 {
						t.Errorf("request %d: %d chunks with text, want 9", r.Index, len(r.Chunks))
					}
				}
				wantFirstTokens(t, run, recs, 12, 0)
			})
	}
}

// KServe v2 infer (Triton's and KServe's): the prompt and max_tokens as
// tensors, the answer the text_output tensor, never streamed.
func TestKServeEndpoint(t *testing.T) {
	cfg := sim.DefaultConfig
	cfg.TTFT, cfg.ITL = 5*time.Millisecond, time.Millisecond
	url := serveHandler(t, sim.New(cfg))
	dir := filepath.Join(t.TempDir(), "run")
	res := runCLI(t, time.Minute, "profile", "-m", "ensemble", "-u", url, "--endpoint-type", "kserve", "--concurrency", "2", "--request-count", "6",
		"--isl", "20", "--osl", "9", "--extra-inputs", "ignore_eos:true", "--random-seed", "6", "--no-server-metrics", "--artifact-dir", dir)
	if res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	run, err := result.Read(dir)
	if err != nil || run.Counts.OK != 6 || run.Counts.Errors != 0 || !strings.HasSuffix(run.Target.URL, "/v2/models/ensemble/infer") {
		t.Fatalf("%v %+v %s", err, run.Counts, run.Target.URL)
	}
	for _, r := range readRecords(t, dir) {
		if r.OSL != 9 || r.ISL != 20 {
			t.Errorf("request %d: OSL %d, ISL %d; want 9, 20", r.Index, r.OSL, r.ISL)
		}
	}
	if res := runCLI(t, time.Minute, "profile", "-m", "m", "-u", url, "--endpoint-type", "kserve", "--streaming"); res.code != 2 || !strings.Contains(res.stderr, "--streaming") {
		t.Errorf("kserve --streaming: exit %d\n%s", res.code, res.stderr)
	}
}

// vLLM's tokens-in API and SOLIDO's RAG prompt API end to end against
// serve, streamed (both client paths) and whole. vllm_generate sends the
// prompt as --tokenizer's ids (the server counts 20 of them) and counts
// the output by its ids (9, as the server says); without --tokenizer it is
// refused before any load. solido_rag's answer is text.
func TestTokensInAndRAGEndpoints(t *testing.T) {
	cfg := sim.DefaultConfig
	cfg.TTFT, cfg.ITL = 12*time.Millisecond, 3*time.Millisecond
	srv := sim.New(cfg)
	url := serveHandler(t, srv)
	tok := filepath.Join("..", "tokenizer", "testdata", "qwen3-trimmed.json")
	eachEndpointRun(t, "vllm_generate", url, 6, []string{"-m", "Qwen/Qwen3-0.6B", "--endpoint-type", "vllm_generate", "--tokenizer", tok,
		"--concurrency", "2", "--request-count", "6", "--isl", "20", "--osl", "9", "--use-server-token-count",
		"--extra-inputs", "ignore_eos:true", "--random-seed", "6"},
		func(t *testing.T, er endpointRun, run *result.Run, recs []record.Record) {
			wantTokens(t, recs, 9, 0, 20, true)
			if !strings.HasSuffix(run.Target.URL, "/inference/v1/generate") {
				t.Errorf("target %s", run.Target.URL)
			}
			if er.stream {
				wantFirstTokens(t, run, recs, 12, 0)
			}
		})
	for _, tr := range srv.Truths() {
		if tr.Endpoint == "vllm_generate" && tr.ISL != 20 {
			t.Errorf("the server counted %d prompt ids, want 20", tr.ISL)
		}
	}
	if res := runCLI(t, time.Minute, "profile", "-m", "m", "-u", url, "--endpoint-type", "vllm_generate", "--request-count", "1"); res.code != 2 || !strings.Contains(res.stderr, "--tokenizer") {
		t.Errorf("vllm_generate without --tokenizer: exit %d\n%s", res.code, res.stderr)
	}
	// A raw_payload file of tokens-in bodies goes as it is, with no
	// --tokenizer: ISL is each body's ids, OSL the ids received.
	payloads := filepath.Join(t.TempDir(), "ids.jsonl")
	os.WriteFile(payloads, []byte(`{"model":"m","token_ids":[9707,11,1879,0,5],"sampling_params":{"max_tokens":4,"ignore_eos":true}}`+"\n"+
		`{"model":"m","token_ids":[1,2,3],"sampling_params":{"max_tokens":6,"ignore_eos":true}}`+"\n"), 0o644)
	dir := filepath.Join(t.TempDir(), "raw")
	if res := runCLI(t, time.Minute, "profile", "-m", "m", "-u", url, "--endpoint-type", "vllm_generate", "--custom-dataset-type", "raw_payload",
		"--input-file", payloads, "--request-count", "2", "--no-server-metrics", "--artifact-dir", dir); res.code != 0 {
		t.Fatalf("raw payloads: exit %d\n%s", res.code, res.stderr)
	}
	recs := readRecords(t, dir)
	if len(recs) != 2 {
		t.Fatalf("%d records of 2 raw payloads", len(recs))
	}
	for _, r := range recs {
		want := map[int][2]int{5: {5, 4}, 3: {3, 6}}[r.ISL]
		if !r.OK() || r.ISL != want[0] || r.OSL != want[1] || r.ServerISL != r.ISL || r.ServerOSL != r.OSL {
			t.Errorf("raw payload %d: ISL %d (server %d), OSL %d (server %d), %s", r.Index, r.ISL, r.ServerISL, r.OSL, r.ServerOSL, r.ErrMsg)
		}
	}
	eachEndpointRun(t, "solido_rag", url, 6, []string{"-m", "llama", "--endpoint-type", "solido_rag",
		"--concurrency", "2", "--request-count", "6", "--isl", "20", "--extra-inputs", "ignore_eos:true", "--extra-inputs", "max_tokens:9", "--random-seed", "6"},
		func(t *testing.T, er endpointRun, run *result.Run, recs []record.Record) {
			for _, r := range recs {
				if r.OSL != 9 || r.ISL != 20 {
					t.Errorf("request %d: OSL %d, ISL %d; want 9, 20", r.Index, r.OSL, r.ISL)
				}
			}
			if er.stream {
				wantFirstTokens(t, run, recs, 12, 0)
			}
		})
}
