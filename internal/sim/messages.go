package sim

import (
	"strconv"

	"github.com/aiperf-action/aiperf-action/internal/tokenizer"
)

// Anthropic's messages API, as its server streams it: every event has its
// type on an event: line and in its data, the first token comes after
// message_start, content_block_start and a ping, the reasoning (extended
// thinking) in a thinking block before the text block, and the stream ends
// with message_delta (stop reason and output usage) and message_stop,
// without [DONE].

// messagesStop is Anthropic's name for a finish reason.
func messagesStop(finish string) string {
	if finish == "length" {
		return "max_tokens"
	}
	return "end_turn"
}

func sseNamed(buf []byte, name, data string) []byte {
	buf = append(buf, "event: "...)
	buf = append(buf, name...)
	buf = append(buf, "\ndata: "...)
	buf = append(buf, data...)
	return append(buf, "\n\n"...)
}

// blockStart opens content block i: thinking or text.
func blockStart(buf []byte, i int, thinking bool) []byte {
	block := `{"type":"text","text":""}`
	if thinking {
		block = `{"type":"thinking","thinking":"","signature":""}`
	}
	return sseNamed(buf, "content_block_start", `{"type":"content_block_start","index":`+strconv.Itoa(i)+`,"content_block":`+block+`}`)
}

func blockStop(buf []byte, i int) []byte {
	return sseNamed(buf, "content_block_stop", `{"type":"content_block_stop","index":`+strconv.Itoa(i)+`}`)
}

// messagesEvent appends token k's events: the message's opening before the
// first, the switch from the thinking block to the text block where the
// reasoning ends.
func (rp *reply) messagesEvent(buf []byte, k int) []byte {
	if k == 0 {
		buf = sseNamed(buf, "message_start", `{"type":"message_start","message":{"id":"`+rp.id()+`","type":"message","role":"assistant","content":[],"model":`+rp.modelJSON+`,"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":`+strconv.Itoa(rp.isl)+`,"output_tokens":1}}}`)
		buf = blockStart(buf, 0, rp.reason > 0)
		buf = sseNamed(buf, "ping", `{"type": "ping"}`)
	}
	block := 0
	if rp.reason > 0 && k >= rp.reason {
		block = 1
		if k == rp.reason {
			buf = blockStop(buf, 0)
			buf = blockStart(buf, 1, false)
		}
	}
	if k == rp.badAt {
		return append(buf, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\" broken\n\n"...) // faultMalformed
	}
	buf = append(buf, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":"...)
	buf = strconv.AppendInt(buf, int64(block), 10)
	if k < rp.reason {
		buf = append(buf, `,"delta":{"type":"thinking_delta","thinking":" `...)
	} else {
		buf = append(buf, `,"delta":{"type":"text_delta","text":" `...)
	}
	buf = append(buf, tokenizer.Word(int(rp.h)+k)...)
	return append(buf, "\"}}\n\n"...)
}

// messagesEnd closes the last block and the message.
func (rp *reply) messagesEnd(buf []byte) []byte {
	last := 0
	if rp.reason > 0 && rp.reason < rp.n {
		last = 1
	}
	buf = blockStop(buf, last)
	buf = sseNamed(buf, "message_delta", `{"type":"message_delta","delta":{"stop_reason":"`+messagesStop(rp.finish)+`","stop_sequence":null},"usage":{"output_tokens":`+strconv.Itoa(rp.n)+`}}`)
	return sseNamed(buf, "message_stop", `{"type":"message_stop"}`)
}

// messagesWhole is a whole message: a thinking block (when there is
// reasoning) and a text block.
func (rp *reply) messagesWhole(text []byte) string {
	cut := 0
	for k := 0; k < rp.reason; k++ {
		cut += 1 + len(tokenizer.Word(int(rp.h)+k))
	}
	content := ""
	if rp.reason > 0 {
		content = `{"type":"thinking","thinking":"` + string(text[:cut]) + `","signature":"sim"},`
	}
	content += `{"type":"text","text":"` + string(text[cut:]) + `"}`
	return `{"id":"` + rp.id() + `","type":"message","role":"assistant","model":` + rp.modelJSON + `,"content":[` + content + `],"stop_reason":"` + messagesStop(rp.finish) +
		`","stop_sequence":null,"usage":{"input_tokens":` + strconv.Itoa(rp.isl) + `,"output_tokens":` + strconv.Itoa(rp.n) + `}}`
}
