package sim

import (
	"strconv"

	"github.com/aiperf-action/aiperf-action/internal/tokenizer"
)

// OpenAI's Responses API, as it streams: typed events with a sequence
// number, the text in response.output_text.delta, reasoning (with
// --reasoning-tokens) in response.reasoning_text.delta as vLLM sends it,
// and response.completed with the usage and the whole output; no [DONE].

var responsesShape = shape{name: "responses", idPrefix: "resp_", responses: true, roleChunk: true}

func (rp *reply) seqEvent(buf []byte, name, rest string) []byte {
	rp.seq++
	return sseNamed(buf, name, `{"type":"`+name+`","sequence_number":`+strconv.Itoa(rp.seq)+rest+`}`)
}

func (rp *reply) responseObj(status, output string) string {
	usage := `null`
	if status == "completed" || status == "incomplete" {
		usage = `{"input_tokens":` + strconv.Itoa(rp.isl) + `,"input_tokens_details":{"cached_tokens":0},"output_tokens":` + strconv.Itoa(rp.n) +
			`,"output_tokens_details":{"reasoning_tokens":` + strconv.Itoa(rp.reason) + `},"total_tokens":` + strconv.Itoa(rp.isl+rp.n) + `}`
	}
	return `{"id":"` + rp.id() + `","object":"response","created_at":` + strconv.FormatInt(rp.arrival.Unix(), 10) + `,"status":"` + status +
		`","error":null,"model":` + rp.modelJSON + `,"output":[` + output + `],"usage":` + usage + `}`
}

// responsesEvent appends token k's events, and the response's opening
// before the first.
func (rp *reply) responsesEvent(buf []byte, k int) []byte {
	msg := `"item_id":"msg_` + rp.id() + `","output_index":` + strconv.Itoa(rp.msgIndex()) + `,"content_index":0`
	if k == 0 {
		buf = rp.seqEvent(buf, "response.created", `,"response":`+rp.responseObj("in_progress", ""))
		buf = rp.seqEvent(buf, "response.in_progress", `,"response":`+rp.responseObj("in_progress", ""))
		if rp.reason > 0 {
			buf = rp.seqEvent(buf, "response.output_item.added", `,"output_index":0,"item":{"id":"rs_`+rp.id()+`","type":"reasoning","summary":[]}`)
		}
	}
	if k == rp.reason {
		buf = rp.seqEvent(buf, "response.output_item.added", `,"output_index":`+strconv.Itoa(rp.msgIndex())+`,"item":{"id":"msg_`+rp.id()+`","type":"message","status":"in_progress","role":"assistant","content":[]}`)
		buf = rp.seqEvent(buf, "response.content_part.added", ","+msg+`,"part":{"type":"output_text","text":"","annotations":[]}`)
	}
	if k == rp.badAt {
		return append(buf, "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\" broken\n\n"...) // faultMalformed
	}
	word := ` ` + tokenizer.Word(int(rp.h)+k)
	if k < rp.reason {
		return rp.seqEvent(buf, "response.reasoning_text.delta", `,"item_id":"rs_`+rp.id()+`","output_index":0,"content_index":0,"delta":"`+word+`"`)
	}
	return rp.seqEvent(buf, "response.output_text.delta", ","+msg+`,"delta":"`+word+`","logprobs":[]`)
}

func (rp *reply) msgIndex() int {
	if rp.reason > 0 {
		return 1
	}
	return 0
}

// responsesOutput is the response's output items: the reasoning, the message.
func (rp *reply) responsesOutput(text []byte) string {
	cut := 0
	for k := 0; k < rp.reason; k++ {
		cut += 1 + len(tokenizer.Word(int(rp.h)+k))
	}
	out := ""
	if rp.reason > 0 {
		out = `{"id":"rs_` + rp.id() + `","type":"reasoning","summary":[],"content":[{"type":"reasoning_text","text":"` + string(text[:cut]) + `"}]},`
	}
	return out + `{"id":"msg_` + rp.id() + `","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"` + string(text[cut:]) + `","annotations":[]}]}`
}

// responsesEnd closes the text and the response.
func (rp *reply) responsesEnd(buf []byte) []byte {
	text := make([]byte, 0, rp.n*8)
	for k := 0; k < rp.n; k++ {
		text = append(text, ' ')
		text = append(text, tokenizer.Word(int(rp.h)+k)...)
	}
	status := "completed"
	if rp.finish == "length" {
		status = "incomplete"
	}
	buf = rp.seqEvent(buf, "response.output_text.done", `,"item_id":"msg_`+rp.id()+`","output_index":`+strconv.Itoa(rp.msgIndex())+`,"content_index":0,"text":"`+string(text)+`"`)
	return rp.seqEvent(buf, "response."+status, `,"response":`+rp.responseObj(status, rp.responsesOutput(text)))
}

// responsesWhole is a whole response object.
func (rp *reply) responsesWhole(text []byte) string {
	status := "completed"
	if rp.finish == "length" {
		status = "incomplete"
	}
	return rp.responseObj(status, rp.responsesOutput(text))
}
