package sim

import (
	"strconv"
	"strings"

	"github.com/aiperf-action/aiperf-action/internal/tokenizer"
)

// vLLM's tokens-in, tokens-out API (/inference/v1/generate) and a SOLIDO
// RAG pipeline's prompt API (/rag/api/prompt). vLLM's events each carry
// their token_ids, with "usage":null as pydantic writes it, the last its
// finish_reason, then a usage chunk when asked for and [DONE]; its whole
// answer is choices[0].token_ids with usage. SOLIDO's answer is content
// and the sources retrieved; its stream, events of content, the last with
// the sources, ending with the body.

var (
	vllmGenShape = shape{name: "vllm_generate", native: nativeVLLM}
	solidoShape  = shape{name: "solido_rag", native: nativeSolido}
)

// tokenID is the id of output token k: any id, as the sim has no vocabulary
// of ids, fixed by the request's hash.
func (rp *reply) tokenID(k int) int { return 1000 + (int(rp.h)+k)%50000 }

func (rp *reply) vllmIDs(buf []byte, from, to int) []byte {
	buf = append(buf, '[')
	for k := from; k < to; k++ {
		if k > from {
			buf = append(buf, ',')
		}
		buf = strconv.AppendInt(buf, int64(rp.tokenID(k)), 10)
	}
	return append(buf, ']')
}

// vllmEvent is token k's event.
func (rp *reply) vllmEvent(buf []byte, k int) []byte {
	if k == rp.badAt {
		return append(buf, "data: {\"request_id\":\"x\",\"choices\":[{\"token_ids\":[1\n\n"...) // faultMalformed
	}
	finish := `null`
	if k == rp.n-1 {
		finish = `"` + rp.finish + `"`
	}
	buf = append(buf, `data: {"request_id":"`+rp.idStr+`","choices":[{"index":0,"logprobs":null,"finish_reason":`+finish+`,"token_ids":`...)
	buf = rp.vllmIDs(buf, k, k+1)
	return append(buf, "}],\"usage\":null}\n\n"...)
}

func (rp *reply) vllmEnd(buf []byte) []byte {
	if rp.withUsage {
		buf = append(buf, `data: {"request_id":"`+rp.idStr+`","choices":[],`+rp.usageJSON()+"}\n\n"...)
	}
	return append(buf, "data: [DONE]\n\n"...)
}

func (rp *reply) vllmWhole() string {
	ids := rp.vllmIDs(nil, 0, rp.n)
	return `{"request_id":"` + rp.idStr + `","choices":[{"index":0,"logprobs":null,"finish_reason":"` + rp.finish + `","token_ids":` + string(ids) + `}],` +
		rp.usageJSON() + `,"prompt_logprobs":null,"kv_transfer_params":null}`
}

// solidoSources are the documents the pipeline says it retrieved.
func (rp *reply) solidoSources() string {
	var b strings.Builder
	b.WriteString(`[`)
	for i := 0; i < 3; i++ {
		if i > 0 {
			b.WriteString(`,`)
		}
		b.WriteString(`{"id":"doc_` + strconv.FormatUint(uint64(rp.h)+uint64(i), 16) + `","title":"Document ` + strconv.Itoa(i+1) + `","score":0.` + strconv.Itoa(9-i) + `}`)
	}
	b.WriteString(`]`)
	return b.String()
}

func (rp *reply) solidoEvent(buf []byte, k int) []byte {
	if k == rp.badAt {
		return append(buf, "data: {\"content\":\" broken\n\n"...) // faultMalformed
	}
	buf = append(buf, `data: {"content":`...)
	buf = strconv.AppendQuote(buf, " "+tokenizer.Word(int(rp.h)+k))
	if k == rp.n-1 {
		buf = append(buf, `,"sources":`+rp.solidoSources()...)
	}
	return append(buf, "}\n\n"...)
}

func (rp *reply) solidoWhole(text []byte) string {
	return `{"content":` + strconv.Quote(string(text)) + `,"sources":` + rp.solidoSources() + `,"inference_model":` + rp.modelJSON + `}`
}
