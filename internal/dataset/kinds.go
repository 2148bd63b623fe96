package dataset

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/aiperf-action/aiperf-action/internal/tokenizer"
)

// Dataset kinds: AIPerf's --custom-dataset-type names, "" for a JSONL file
// without one, and --public-dataset's sharegpt (read from a local file).
const (
	KindJSONL     = ""
	SingleTurn    = "single_turn"     // JSONL of AIPerf's single-turn fields, in file order
	RandomPool    = "random_pool"     // the same lines (or a folder of pools), drawn at random with replacement
	MultiTurn     = "multi_turn"      // JSONL of conversations, {"session_id", "turns": [...]}
	MooncakeTrace = "mooncake_trace"  // timestamp (ms), input_length, output_length, hash_ids of 512-token blocks
	BailianTrace  = "bailian_trace"   // Mooncake's fields with timestamps in seconds, 16-token blocks, chat_id/turn
	BasetenTrace  = "baseten_trace"   // Parquet rows: timestamp_start_unix_ms, prompt, input_tokens, output_tokens
	BurstGPTTrace = "burst_gpt_trace" // CSV: Timestamp (s), Request tokens, Response tokens
	WekaTrace     = "weka_trace"      // Weka's agentic session traces: a JSON file, or a folder of them, one trace a file
	RawPayload    = "raw_payload"     // JSONL of whole request bodies, sent as they are
	InputsJSON    = "inputs_json"     // an inputs.json (AIPerf's or this tool's): its payloads, sent as they are
	ShareGPT      = "sharegpt"        // --public-dataset: a ShareGPT JSON file's first human/gpt pairs
)

// ShareGPTRepo and ShareGPTFile are where --public-dataset sharegpt is
// fetched from on the hub when no --input-file is given: the file vLLM's,
// SGLang's and AIPerf's benchmarks read.
const (
	ShareGPTRepo = "anon8231489123/ShareGPT_Vicuna_unfiltered"
	ShareGPTFile = "ShareGPT_V3_unfiltered_cleaned_split.json"
)

// Source is an opened dataset: exactly one of Index (lines, each one
// request), Sessions (conversations, a request a turn) and Pools (a
// random_pool folder: a request takes a line of each) is set. Digest is
// the sha256 of what was read, which a worker opening the same path checks.
type Source struct {
	Index    *Index
	Sessions *Sessions
	Pools    []Pool
	Digest   string
}

// Options are what a kind's reader takes besides the path.
type Options struct {
	Tokenizer *tokenizer.Tokenizer // counts lengths, and gives synthesized text its words
	Words     uint64               // root of the words of lines that give a length, not a text
	Blocks    uint64               // root of a trace's hash_ids blocks' words
	BlockSize int                  // tokens a hash_ids block (--isl-block-size); 0: the kind's own (AIPerf's: 512 Mooncake, 16 Bailian)
	Streaming bool                 // a whole body's "stream" is set to this
	// A capture's requests are rebuilt for this model with these
	// --extra-inputs (sagemaker_data_capture).
	Model string
	Extra map[string]json.RawMessage
}

// Kind is one dataset kind: its name and how a path of it is opened.
type Kind struct {
	Name string
	Open func(path string, o Options) (Source, error)
}

// Kinds are the dataset kinds, in the order the help lists them. A new
// kind is a file with its reader and a row here.
var Kinds = []Kind{
	{Name: KindJSONL, Open: lines(func(path string, o Options) (*Index, error) { return indexFile(path, o.Tokenizer, o.Words, Blocks{}) })},
	{Name: SingleTurn, Open: lines(func(path string, o Options) (*Index, error) { return indexFile(path, o.Tokenizer, o.Words, Blocks{}) })},
	{Name: RandomPool, Open: openRandomPool},
	{Name: MultiTurn, Open: sessions(func(path string, o Options) (*Sessions, error) { return indexSessions(path, o.Tokenizer) })},
	{Name: MooncakeTrace, Open: lines(func(path string, o Options) (*Index, error) {
		return indexFile(path, o.Tokenizer, o.Words, Blocks{Size: positiveOr(o.BlockSize, 512), Root: o.Blocks})
	})},
	{Name: BailianTrace, Open: lines(func(path string, o Options) (*Index, error) {
		return indexBailian(path, o.Tokenizer, o.Words, Blocks{Size: positiveOr(o.BlockSize, 16), Root: o.Blocks})
	})},
	{Name: BasetenTrace, Open: lines(func(path string, o Options) (*Index, error) { return indexBaseten(path, o.Tokenizer, o.Words) })},
	{Name: BurstGPTTrace, Open: lines(func(path string, o Options) (*Index, error) { return indexBurstGPT(path, o.Tokenizer, o.Words) })},
	{Name: WekaTrace, Open: sessions(func(path string, o Options) (*Sessions, error) { return indexWeka(path, o.Tokenizer, o.Blocks) })},
	{Name: RawPayload, Open: openRawPayload},
	{Name: InputsJSON, Open: lines(func(path string, o Options) (*Index, error) { return indexInputsJSON(path, o.Tokenizer, o.Streaming) })},
	{Name: SageMakerDataCapture, Open: lines(indexSageMaker)},
	{Name: ShareGPT, Open: lines(func(path string, o Options) (*Index, error) { return indexShareGPT(path, o.Tokenizer, o.Words) })},
	{Name: DagJSONL, Open: sessions(func(path string, o Options) (*Sessions, error) { return indexDag(path, o.Tokenizer, o.Model) })},
}

// LookupKind is the kind named name.
func LookupKind(name string) (Kind, bool) {
	for _, k := range Kinds {
		if k.Name == name {
			return k, true
		}
	}
	return Kind{}, false
}

func positiveOr(n, d int) int {
	if n > 0 {
		return n
	}
	return d
}

// Open reads path as a dataset of kind: once, as a stream, keeping each
// line's place and lengths (its text is read back when its request is
// built).
func Open(kind, path string, o Options) (Source, error) {
	k, ok := LookupKind(kind)
	if !ok {
		return Source{}, fmt.Errorf("dataset kind %q: not one of this tool's", kind)
	}
	return k.Open(path, o)
}

func lines(index func(string, Options) (*Index, error)) func(string, Options) (Source, error) {
	return func(path string, o Options) (Source, error) {
		x, err := index(path, o)
		if err != nil {
			return Source{}, err
		}
		return Source{Index: x, Digest: x.Digest}, nil
	}
}

func sessions(index func(string, Options) (*Sessions, error)) func(string, Options) (Source, error) {
	return func(path string, o Options) (Source, error) {
		x, err := index(path, o)
		if err != nil {
			return Source{}, err
		}
		return Source{Sessions: x, Digest: x.Digest}, nil
	}
}

// openRawPayload reads a raw_payload path: a folder is conversations (a
// file each), a file single requests (a line each).
func openRawPayload(path string, o Options) (Source, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return sessions(func(path string, o Options) (*Sessions, error) {
			return indexRawSessions(path, o.Tokenizer, o.Streaming)
		})(path, o)
	}
	return lines(func(path string, o Options) (*Index, error) { return indexRawPayload(path, o.Tokenizer, o.Streaming) })(path, o)
}

// openRandomPool reads a random_pool path: a folder is pools, a file its
// lines (drawn at random by the plan).
func openRandomPool(path string, o Options) (Source, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		pools, digest, err := indexPools(path, o.Tokenizer, o.Words)
		if err != nil {
			return Source{}, err
		}
		return Source{Pools: pools, Digest: digest}, nil
	}
	x, err := indexFile(path, o.Tokenizer, o.Words, Blocks{})
	if err != nil {
		return Source{}, err
	}
	return Source{Index: x, Digest: x.Digest}, nil
}
