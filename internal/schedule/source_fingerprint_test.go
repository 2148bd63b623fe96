package schedule

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aiperf-action/aiperf-action/internal/config"
)

// TestSourceFingerprints pins the plan each prompt source makes (sessions,
// trace and dataset kinds, pools, rankings, media, tokens in, whole
// bodies): its profile_hash, the sha256 of its inputs.json, and of what a
// worker's share of two reads (entries' index, session, due, delay and
// body). The plan's code can be moved about freely; what it makes may
// change only on purpose (-update, as TestPlanFingerprints).
func TestSourceFingerprints(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	single := write("single.jsonl", `{"text":"hello there world","extra":{"temperature":1.5}}
{"texts":["Explain","neural networks."],"output_length":9}
{"input_length":12,"output_length":3}
{"text_input":"What are transformers?"}
`)
	ranked := write("ranked.jsonl", `{"texts":[{"name":"query","contents":["what is a cat"]},{"name":"passages","contents":["a cat is an animal","dogs bark"]}]}
{"texts":[{"name":"query","contents":["why is the sky blue"]},{"name":"passages","contents":["light scatters"]}]}
`)
	mooncake := write("mooncake.jsonl", `{"timestamp":0,"input_length":40,"output_length":5,"hash_ids":[1,2]}
{"timestamp":30,"input_length":45,"output_length":4,"hash_ids":[1,3]}
{"timestamp":10,"input_length":70,"output_length":2,"hash_ids":[4,5,6]}
`)
	turns := write("turns.jsonl", `{"session_id":"a","turns":[{"text":"first question","output_length":4},{"text":"and then?","delay":25}]}
{"session_id":"b","turns":[{"text":"only one"}]}
`)
	var convs []map[string]any
	for i := range 4 {
		convs = append(convs, map[string]any{"id": i, "conversations": []map[string]string{
			{"from": "human", "value": strings.Repeat(fmt.Sprintf("question %d about the weather ", i), 2)},
			{"from": "gpt", "value": strings.Repeat("an answer of a good length for the filter ", 3)},
		}})
	}
	share, _ := json.Marshal(convs)
	sharegpt := write("sharegpt.json", string(share))
	burst := write("burst.csv", "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n0,ChatGPT,30,4,34,Conversation log\n0.5,ChatGPT,12,6,18,Conversation log\n")
	raw := write("raw.jsonl", `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":5}
{"model":"m","messages":[{"role":"user","content":"there you go"}],"max_tokens":7}
`)
	inputs := write("inputs.json", `{"data":[{"session_id":"s1","payloads":[{"model":"m","messages":[{"role":"user","content":"a b c"}],"max_tokens":3}]},{"session_id":"s2","payloads":[{"model":"m","messages":[{"role":"user","content":"d e"}],"max_tokens":4}]}]}`)
	pools := filepath.Join(dir, "pools")
	write("pools/queries.jsonl", `{"texts":[{"name":"query","contents":["what is a cat"]}]}
{"text":"a second pool line"}
`)
	write("pools/passages.jsonl", `{"text":"passage one"}
{"text":"passage two","extra":{"top_k":3}}
{"text":"passage three"}
`)
	qwen := filepath.Join("..", "tokenizer", "testdata", "qwen3-trimmed.json")
	weka := filepath.Join("..", "dataset", "testdata", "weka")

	cases := []struct {
		name string
		set  func(p *config.Profile)
	}{
		{"sessions", func(p *config.Profile) {
			p.ConversationNum, p.ConversationTurnMean, p.ConversationTurnStddev = 4, 2.5, 1
			p.TurnDelayMean, p.TurnDelayStddev, p.UserContextPromptLength = 20, 5, 8
		}},
		{"sessions-rate", func(p *config.Profile) {
			p.ConversationNum, p.ConversationTurnMean, p.RequestRate, p.Concurrency, p.ConcurrencySet = 5, 3, 20, 2, true
		}},
		{"sessions-user-centric", func(p *config.Profile) {
			p.ConversationNum, p.ConversationTurnMean, p.NumUsers, p.UserCentricRate = 3, 2, 2, 4
		}},
		{"sessions-duration", func(p *config.Profile) {
			p.ConversationTurnMean, p.BenchmarkDuration, p.NumDatasetEntries = 2, 3, 4
		}},
		{"multi-turn-file", func(p *config.Profile) {
			p.InputFile, p.CustomDatasetType, p.UserContextPromptLength = turns, config.MultiTurnFile, 6
		}},
		{"weka", func(p *config.Profile) { p.InputFile, p.CustomDatasetType = weka, config.WekaTrace }},
		{"sharegpt", func(p *config.Profile) { p.InputFile, p.PublicDataset = sharegpt, config.ShareGPT }},
		{"mooncake", func(p *config.Profile) {
			p.InputFile, p.CustomDatasetType, p.ISLBlockSize = mooncake, config.MooncakeTrace, 32
		}},
		{"mooncake-capped", func(p *config.Profile) {
			p.InputFile, p.CustomDatasetType, p.ISLBlockSize, p.SynthesisMaxISL, p.SynthesisMaxOSL, p.SynthesisSpeedupRatio = mooncake, config.MooncakeTrace, 32, 50, 3, 2
		}},
		{"burst-gpt", func(p *config.Profile) { p.InputFile, p.CustomDatasetType = burst, config.BurstGPTTrace }},
		{"single-turn-osl", func(p *config.Profile) { p.InputFile, p.CustomDatasetType = single, config.SingleTurn }},
		{"shuffle", func(p *config.Profile) { p.InputFile, p.DatasetSampling = single, config.SamplingShuffle }},
		{"random-sampling-rate", func(p *config.Profile) {
			p.InputFile, p.DatasetSampling, p.RequestRate, p.BenchmarkDuration = single, config.SamplingRandom, 30, 0.5
		}},
		{"random-pool-file", func(p *config.Profile) { p.InputFile, p.CustomDatasetType = single, config.RandomPool }},
		{"random-pool-folder", func(p *config.Profile) { p.InputFile, p.CustomDatasetType = pools, config.RandomPool }},
		{"raw-payload", func(p *config.Profile) { p.InputFile, p.CustomDatasetType = raw, config.RawPayload }},
		{"inputs-json", func(p *config.Profile) { p.InputFile, p.CustomDatasetType = inputs, config.InputsJSON }},
		{"rankings-synthetic", func(p *config.Profile) {
			p.EndpointType, p.RankingsPassagesMean, p.RankingsPassagesStddev = "nim_rankings", 3, 1
			p.RankingsPassageTokensMean, p.RankingsQueryTokensMean, p.RankingsQueryTokensStddev = 20, 8, 2
		}},
		{"rankings-file", func(p *config.Profile) { p.EndpointType, p.InputFile = "cohere_rankings", ranked }},
		{"rankings-pools", func(p *config.Profile) {
			p.EndpointType, p.InputFile, p.CustomDatasetType = "hf_tei_rankings", pools, config.RandomPool
		}},
		{"images", func(p *config.Profile) {
			p.ImageWidthMean, p.ImageWidthStddev, p.ImageHeightMean, p.ImageFormat, p.ImageBatchSize, p.RequestCount = 16, 4, 12, "random", 2, 6
		}},
		{"image-retrieval", func(p *config.Profile) {
			p.EndpointType, p.ImageWidthMean, p.ImageHeightMean, p.RequestCount = "image_retrieval", 8, 8, 4
		}},
		{"audio", func(p *config.Profile) {
			p.AudioLengthMean, p.AudioLengthStddev, p.AudioSampleRates, p.AudioDepths, p.RequestCount = 0.2, 0.05, []float64{8, 16}, []int{8, 16}, 4
		}},
		{"audio-transcription", func(p *config.Profile) {
			p.EndpointType, p.AudioLengthMean, p.RequestCount = "audio_transcription", 0.1, 3
		}},
		{"prefixes-system", func(p *config.Profile) {
			p.NumPrefixPrompts, p.PrefixPromptLength, p.SharedSystemPromptLength = 3, 10, 6
		}},
		{"seq-dist", func(p *config.Profile) { p.SeqDist = "20|4,5:60;80,10|2:40" }},
		{"tokens-in-cycle", func(p *config.Profile) {
			p.EndpointType, p.Tokenizer, p.BenchmarkDuration, p.NumDatasetEntries, p.SharedSystemPromptLength = "vllm_generate", qwen, 2, 5, 4
		}},
		{"cycle-fresh-limit", func(p *config.Profile) {
			p.BenchmarkDuration, p.NumDatasetEntries, p.RequestCount, p.RequestCountSet = 2, 4, 9, true
		}},
		{"warmup-rate", func(p *config.Profile) {
			p.WarmupRequestCount, p.WarmupRequestRate, p.Concurrency, p.ConcurrencySet = 6, 50, 2, true
		}},
		{"warmup-duration-cycle", func(p *config.Profile) { p.WarmupDuration, p.NumDatasetEntries = 1, 3 }},
	}
	var b strings.Builder
	for _, c := range cases {
		p := profile()
		c.set(p)
		if err := p.Validate(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		pl, err := Build(p, 42)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		in, err := inputsJSON(pl)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		sum := sha256.Sum256(in)
		shares := sha256.New()
		for k := range pl.Phases {
			ph := &pl.Phases[k]
			counts := ph.Counts([]int{2, 1})
			for w := range 2 {
				it, n := ph.Share([]int{2, 1}, w), 0
				for ; it.Next(true); n++ {
					e := it.Entry()
					fmt.Fprintf(shares, "%d %d %s %d %d %d %d %d %s|%s|%d %d %v\n", k, w, e.SessionID, e.Index, e.Turn, e.DueNs, e.DelayNs, e.CancelAfterNs,
						e.Body, e.Prompt, e.ISL, e.SystemISL, string(e.Fresh(3, pl.Words())))
				}
				if it.Err() != nil || n != counts[w] {
					t.Fatalf("%s phase %d worker %d: %d entries, Counts %d (%v)", c.name, k, w, n, counts[w], it.Err())
				}
			}
		}
		fmt.Fprintf(&b, "%s %s inputs:%s shares:%s\n", c.name, pl.Hash(p), hex.EncodeToString(sum[:8]), hex.EncodeToString(shares.Sum(nil)[:8]))
	}
	checkPlans(t, "sources.txt", b.String())
}
