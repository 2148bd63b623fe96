package sim

import (
	"strconv"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/tokenizer"
)

// Ollama's native APIs, as it streams them: one JSON object a line
// (application/x-ndjson), the text in message.content (/api/chat) or
// response (/api/generate), a thinking model's reasoning in
// message.thinking or thinking, and a last line with "done":true, the
// done_reason and the counts.

var (
	ollamaChatShape     = shape{name: "ollama_chat", ollama: ollamaChat, roleChunk: true}
	ollamaGenerateShape = shape{name: "ollama_generate", ollama: ollamaGenerate, roleChunk: true}
)

func (rp *reply) ollamaHead(buf []byte) []byte {
	buf = append(buf, `{"model":`...)
	buf = append(buf, rp.modelJSON...)
	buf = append(buf, `,"created_at":"`...)
	buf = append(buf, time.Now().UTC().Format(time.RFC3339Nano)...)
	return append(buf, `",`...)
}

// ollamaText appends the text fields of a line: thinking or the answer.
func (rp *reply) ollamaText(buf []byte, thinking, answer string) []byte {
	if rp.sh.ollama == ollamaChat {
		buf = append(buf, `"message":{"role":"assistant","content":"`...)
		buf = append(buf, answer...)
		buf = append(buf, '"')
		if thinking != "" {
			buf = append(buf, `,"thinking":"`...)
			buf = append(buf, thinking...)
			buf = append(buf, '"')
		}
		return append(buf, '}')
	}
	buf = append(buf, `"response":"`...)
	buf = append(buf, answer...)
	buf = append(buf, '"')
	if thinking != "" {
		buf = append(buf, `,"thinking":"`...)
		buf = append(buf, thinking...)
		buf = append(buf, '"')
	}
	return buf
}

// ollamaLine appends token k's line.
func (rp *reply) ollamaLine(buf []byte, k int) []byte {
	if k == rp.badAt {
		return append(buf, "{\"model\":\"m\",\"message\":{\"content\":\" broken\n"...) // faultMalformed
	}
	word := " " + tokenizer.Word(int(rp.h)+k)
	buf = rp.ollamaHead(buf)
	if k < rp.reason {
		buf = rp.ollamaText(buf, word, "")
	} else {
		buf = rp.ollamaText(buf, "", word)
	}
	return append(buf, ",\"done\":false}\n"...)
}

// ollamaDone appends the last line: with text, a whole (non-streamed)
// answer's, else the stream's closing line, empty but for the counts.
func (rp *reply) ollamaDone(buf, text []byte) []byte {
	thinking, answer := "", ""
	if text != nil {
		cut := 0
		for k := 0; k < rp.reason; k++ {
			cut += 1 + len(tokenizer.Word(int(rp.h)+k))
		}
		thinking, answer = string(text[:cut]), string(text[cut:])
	}
	buf = rp.ollamaHead(buf)
	buf = rp.ollamaText(buf, thinking, answer)
	reason := "stop"
	if rp.finish == "length" {
		reason = "length"
	}
	d := time.Since(rp.arrival).Nanoseconds()
	buf = append(buf, `,"done":true,"done_reason":"`+reason+`","total_duration":`+strconv.FormatInt(d, 10)+
		`,"load_duration":1000000,"prompt_eval_count":`+strconv.Itoa(rp.isl)+`,"prompt_eval_duration":1000000,"eval_count":`+strconv.Itoa(rp.n)+
		`,"eval_duration":`+strconv.FormatInt(d, 10)+"}\n"...)
	return buf
}
