package endpoint

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"strconv"
)

// VLLMGenerate is vLLM's tokens-in, tokens-out API (vllm_generate):
// POST /inference/v1/generate with {"token_ids": [the prompt's ids],
// "sampling_params": {"max_tokens": …}}. vLLM serves it beside the
// OpenAI API (recent versions only with VLLM_ENABLE_SCALE_OUT_ENDPOINTS=1);
// it skips the server's tokenizer and chat template, which is how an RL
// rollout or a disaggregated router calls an engine. The answer is
// choices[0].token_ids; a stream's events each carry their new
// token_ids, then a usage chunk (stream_options.include_usage) and
// [DONE]. No text crosses the wire either way: the prompt is the
// profile's tokenizer's ids (--tokenizer must be the served model's),
// and the output is counted by its ids, exactly, with no tokenizer.
type VLLMGenerate struct{ openAI }

var (
	_ Kind     = VLLMGenerate{}
	_ TokenOut = VLLMGenerate{}
	_ TokenIn  = VLLMGenerate{}
)

// TokenIn is a Kind whose requests carry the prompt as token ids
// (Input.TokenIDs), which the plan's builder encodes with the profile's
// tokenizer.
type TokenIn interface{ TokenIn() }

// TokenOut is a Kind whose content is token ids, not text: a content
// string is ids separated by commas, and the output length is how many
// there are (CountIDs), not a tokenizer's count.
type TokenOut interface{ TokenOut() }

func (VLLMGenerate) TokenIn()  {}
func (VLLMGenerate) TokenOut() {}

// CountIDs is how many token ids a TokenOut content string holds.
func CountIDs(s string) int {
	if s == "" {
		return 0
	}
	n := 1
	for i := 0; i < len(s); i++ {
		if s[i] == ',' {
			n++
		}
	}
	return n
}

// vllmSampling are the --extra-inputs keys that are sampling parameters
// (vLLM's SamplingParams), which this API takes in sampling_params, not
// at the top level as its OpenAI API does.
var vllmSampling = map[string]bool{
	"temperature": true, "top_p": true, "top_k": true, "min_p": true, "seed": true, "ignore_eos": true,
	"min_tokens": true, "stop": true, "stop_token_ids": true, "presence_penalty": true, "frequency_penalty": true,
	"repetition_penalty": true, "n": true, "logprobs": true, "prompt_logprobs": true, "skip_special_tokens": true,
	"detokenize": true, "max_tokens": true,
}

// Build makes a generate request from in.TokenIDs.
func (VLLMGenerate) Build(in Input) ([]byte, error) {
	if len(in.TokenIDs) == 0 {
		return nil, fmt.Errorf("the vllm_generate endpoint type sends the prompt's token ids, and this prompt has none")
	}
	params := map[string]json.RawMessage{}
	if in.MaxTokens > 0 {
		params["max_tokens"] = json.RawMessage(strconv.Itoa(in.MaxTokens))
	}
	extra := make(map[string]json.RawMessage, len(in.Extra))
	for k, v := range in.Extra {
		if vllmSampling[k] {
			params[k] = v
		} else {
			extra[k] = v
		}
	}
	fields := map[string]any{"token_ids": in.TokenIDs, "sampling_params": params}
	if in.Model != "" {
		fields["model"] = in.Model
	}
	in.MaxTokens, in.Extra = 0, extra
	return marshalBody(fields, in)
}

type vllmWire struct {
	Choices []struct {
		TokenIDs     []int   `json:"token_ids"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage   *Usage          `json:"usage"`
	Error   json.RawMessage `json:"error"`
	Object  string          `json:"object"`
	Message string          `json:"message"`
}

func parseVLLM(data []byte) (Chunk, error) {
	var o vllmWire
	if err := json.Unmarshal(data, &o); err != nil {
		return Chunk{}, fmt.Errorf("malformed JSON: %w", err)
	}
	var c Chunk
	switch {
	case hasError(o.Error):
		c.ServerErr = string(o.Error)
		return c, nil
	case o.Object == "error":
		c.ServerErr = cmp.Or(o.Message, string(data))
		return c, nil
	}
	if len(o.Choices) > 0 {
		ch := o.Choices[0]
		c.Content = joinIDs(ch.TokenIDs)
		if ch.FinishReason != nil {
			c.Finish = *ch.FinishReason
		}
	}
	if o.Usage != nil {
		c.Usage = o.Usage
	}
	return c, nil
}

func joinIDs(ids []int) string {
	b := make([]byte, 0, 7*len(ids))
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(id), 10)
	}
	return string(b)
}

func (VLLMGenerate) ParseChunk(data []byte) (Chunk, error)       { return parseVLLM(data) }
func (VLLMGenerate) ParseResponse(body []byte) (Response, error) { return parseVLLM(body) }

// Scan reads a plain token event's ids without a decode: those of the
// first choice's token_ids, found by their place in the event
// (firstChoiceIDs), in an event that is whole (wellFormed), whose first
// choice's finish_reason is null and that has no usage or error. Any
// other event is decoded whole.
func (VLLMGenerate) Scan(data, buf []byte) ([]byte, int, *Chunk, error) {
	if ids, ok := firstChoiceIDs(data); ok && wellFormed(data) {
		return append(buf[:0], ids...), 0, nil, nil
	}
	c, err := parseVLLM(data)
	if err != nil {
		return nil, 0, nil, err
	}
	return []byte(c.Content), 0, &c, nil
}

// firstChoiceIDs walks a vLLM event once, its strings skipped whole, and
// finds by depth the keys a plain token event has: at the top, choices (an
// array) and no usage, error or object but null; in the array's first
// object, finish_reason null and token_ids, a list of ids as json.Marshal
// writes them (no spaces), returned without its brackets. ok is false for
// any other shape (a key twice, a space after a colon), which the decoder
// then reads.
func firstChoiceIDs(b []byte) (ids []byte, ok bool) {
	depth, choice := 0, -1 // choice: the element of choices we are in (−1: not in choices)
	var seenChoices, seenIDs, nullFinish bool
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			end, _ := stringEnd(b[i:])
			if end < 0 {
				return nil, false
			}
			key, j := b[i+1:i+end], i+end+1
			i += end
			if j >= len(b) || b[j] != ':' {
				continue // a value, not a key
			}
			val := b[j+1:]
			switch {
			case depth == 1:
				switch string(key) {
				case "choices":
					if seenChoices || len(val) == 0 || val[0] != '[' {
						return nil, false
					}
					seenChoices = true
					choice = 0
				case "usage", "error", "object":
					if !bytes.HasPrefix(val, []byte("null")) {
						return nil, false
					}
				}
			case depth == 3 && choice == 0:
				switch string(key) {
				case "token_ids":
					k := bytes.IndexByte(val, ']')
					if seenIDs || len(val) == 0 || val[0] != '[' || k < 0 || !idList(val[1:k]) {
						return nil, false
					}
					seenIDs, ids = true, val[1:k]
				case "finish_reason":
					if nullFinish || !bytes.HasPrefix(val, []byte("null")) {
						return nil, false
					}
					nullFinish = true
				}
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 1 {
				choice = -1 // (choices closed)
			}
		case ',':
			if depth == 2 && choice >= 0 {
				choice++
			}
		}
	}
	return ids, seenIDs && nullFinish
}

// idList reports whether b is ids and commas, as json.Marshal writes
// them (no spaces), or empty.
func idList(b []byte) bool {
	digit := false
	for _, x := range b {
		switch {
		case x >= '0' && x <= '9':
			digit = true
		case x == ',' && digit:
			digit = false
		default:
			return false
		}
	}
	return len(b) == 0 || digit
}
