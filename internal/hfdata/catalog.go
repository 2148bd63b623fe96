// Package hfdata reads datasets on the Hugging Face hub as the datasets
// library's load_dataset finds them (a README's configs, else the split
// names in file paths; Parquet, JSON Lines, JSON and CSV files), and
// holds AIPerf's public datasets that live there: --public-dataset NAME
// downloads its files through internal/hub into the standard hub cache
// and turns each row into a prompt, as AIPerf's loaders do.
package hfdata

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Public is one of AIPerf's public datasets on the hub: where its rows
// are and which columns make a request.
type Public struct {
	Repo, Subset, Split string
	// Prompt is the column of the prompt; with Turns, a list of strings,
	// one a turn of a conversation. Template, when set, builds the prompt
	// from several columns ({column} is the column's text).
	Prompt, Template string
	Turns            bool
	Image            string // a column of an image (the hub's {bytes, path}, a list of them, or a URL)
	// Conversation is a column of messages (AIPerf's hf_conversation):
	// the first user's (or human's) message is the prompt, its text at
	// ContentKey, "<image>" placeholders taken out.
	Conversation, ContentKey string
	// Audio is a column of speech clips (AIPerf's hf_asr): each row is
	// ASRPrompt and its clip as a WAV, clips over MaxSpeechSeconds left
	// out.
	Audio string
	// Video is a column of a video's URL, sent as it is for the server
	// to fetch; Choices a column of lettered options ({"A": …}), put
	// after the question as "A.… B.…" (MMVU's, as vLLM's benchmark).
	Video, Choices string
	// Direct marks a dataset not on the hub: its file is downloaded from
	// its own address (spec_bench's, SpecBenchURL).
	Direct bool
}

// Catalog is AIPerf 0.11's public datasets that are rows of prompts
// (with an image, a video URL or a speech clip), by AIPerf's names, with
// AIPerf's repositories, subsets, splits and columns: all on the hub but
// spec_bench.
var Catalog = map[string]Public{
	"aimo":              {Repo: "AI-MO/NuminaMath-TIR", Split: "train", Prompt: "problem"},
	"aimo_aime":         {Repo: "AI-MO/aimo-validation-aime", Split: "train", Prompt: "problem"},
	"aimo_numina_cot":   {Repo: "AI-MO/NuminaMath-CoT", Split: "train", Prompt: "problem"},
	"aimo_numina_1_5":   {Repo: "AI-MO/NuminaMath-1.5", Split: "train", Prompt: "problem"},
	"spec_al_gsm8k":     {Repo: "openai/gsm8k", Subset: "main", Split: "test", Prompt: "question"},
	"spec_al_math500":   {Repo: "HuggingFaceH4/MATH-500", Split: "test", Prompt: "problem"},
	"spec_al_humaneval": {Repo: "openai/openai_humaneval", Split: "test", Prompt: "prompt"},
	"spec_al_mbpp":      {Repo: "google-research-datasets/mbpp", Subset: "full", Split: "test", Prompt: "text"},
	"spec_al_mtbench":   {Repo: "HuggingFaceH4/mt_bench_prompts", Split: "train", Prompt: "prompt", Turns: true},
	"instruct_coder":    {Repo: "likaixin/InstructCoder", Split: "train", Prompt: "instruction"},
	"blazedit_5k":       {Repo: "vdaita/edit_5k_char", Split: "train", Template: blazeditTemplate},
	"blazedit_10k":      {Repo: "vdaita/edit_10k_char", Split: "train", Template: blazeditTemplate},
	"mmstar":            {Repo: "Lin-Chen/MMStar", Split: "val", Prompt: "question", Image: "image"},
	"vision_arena":      {Repo: "lmarena-ai/VisionArena-Chat", Split: "train", Conversation: "conversation", ContentKey: "content", Image: "images"},
	"spec_bench":        {Repo: "hemingkx/Spec-Bench", Direct: true},
	"mmvu":              {Repo: "yale-nlp/MMVU", Split: "validation", Prompt: "question", Choices: "choices", Video: "video"},
	"librispeech":       {Repo: "openslr/librispeech_asr", Subset: "clean", Split: "test", Audio: "audio"},
	"voxpopuli":         {Repo: "facebook/voxpopuli", Subset: "en", Split: "test", Audio: "audio"},
	"gigaspeech":        {Repo: "speechcolab/gigaspeech", Subset: "xs", Split: "test", Audio: "audio"},
	"ami":               {Repo: "edinburghcstr/ami", Subset: "ihm", Split: "test", Audio: "audio"},
	"spgispeech":        {Repo: "kensho/spgispeech", Subset: "test", Split: "test", Audio: "audio"},
	"llava_onevision":   {Repo: "lmms-lab/LLaVA-OneVision-Data", Subset: "sharegpt4o", Split: "train", Conversation: "conversations", ContentKey: "value", Image: "image"},
}

// blazeditTemplate is AIPerf's blazedit prompt (vLLM's BlazeditDataset's).
const blazeditTemplate = "Given a code file, please apply the change requests and generate the new file.\n\nOriginal file:\n```python\n{code}\n```\n\nChange request:\n{change_request}\n\nPlease generate the new code file in the \"New file\" section below."

// Refused are AIPerf's other public datasets, each with why it is not
// read here.
var Refused = map[string]string{
	"exgentic":    "an agentic trace, not rows of prompts: not read here",
	"exgentic_v2": "an agentic trace, not rows of prompts: not read here",
	"weka_hf":     "a Weka trace on the hub: download it and give --input-file with --custom-dataset-type weka_trace",
}

func init() {
	for _, n := range []string{"qualitative", "coding", "humanities", "math", "multilingual", "qa", "rag", "reasoning", "roleplay", "stem", "summarization", "writing",
		"throughput_1k", "throughput_2k", "throughput_8k", "throughput_16k", "throughput_32k"} {
		Refused["speed_bench_"+n] = "the public nvidia/SPEED-Bench repository ships placeholder prompts that AIPerf itself rejects; prepare the data as its README says and give --input-file"
	}
	Refused["semianalysis_cc_traces_weka"] = "a Weka agentic trace: download it and give --input-file with --custom-dataset-type weka_trace"
}

// Lookup is the public dataset named name, or an error naming what is
// known and why a refused one is.
func Lookup(name string) (Public, error) {
	if p, ok := Catalog[name]; ok {
		return p, nil
	}
	if why, ok := Refused[name]; ok {
		return Public{}, fmt.Errorf("not supported here: %s", why)
	}
	for _, prefix := range []string{"speed_bench_qualitative", "semianalysis_cc_traces_weka"} {
		if family := strings.SplitN(prefix, "_", 3)[:2]; strings.HasPrefix(name, strings.Join(family, "_")+"_") {
			return Public{}, fmt.Errorf("not supported here: %s", Refused[prefix])
		}
	}
	return Public{}, fmt.Errorf("not a public dataset (supported: sharegpt, %s)", strings.Join(slices.Sorted(maps.Keys(Catalog)), ", "))
}
