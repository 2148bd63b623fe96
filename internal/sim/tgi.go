package sim

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"

	"github.com/aiperf-action/aiperf-action/internal/tokenizer"
)

// Hugging Face TGI's and SGLang's native generate APIs. TGI streams SSE
// events of one token each from /generate_stream, the last with the whole
// generated_text and details; SGLang's /generate streams events that each
// carry the whole text so far, with meta_info, and then [DONE]. Both serve
// POST /generate: TGI's body has inputs, SGLang's text.

var (
	tgiShape    = shape{name: "huggingface_generate", native: nativeTGI}
	sglangShape = shape{name: "sglang_generate", native: nativeSGLang}
)

const (
	nativeTGI = 1 + iota
	nativeSGLang
	nativeTriton
	nativeKServe
	nativeVLLM
	nativeSolido
)

// nativeGenerate routes POST /generate by its body.
func (s *Server) nativeGenerate(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "read body")
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var probe struct {
		Inputs json.RawMessage `json:"inputs"`
	}
	json.Unmarshal(body, &probe)
	if len(probe.Inputs) > 0 {
		s.generate(w, r, tgiShape)
		return
	}
	s.generate(w, r, sglangShape)
}

func (rp *reply) words(upTo int) []byte {
	var b []byte
	for k := 0; k < upTo; k++ {
		b = append(b, ' ')
		b = append(b, tokenizer.Word(int(rp.h)+k)...)
	}
	return b
}

// sglangText is the first upTo words as a JSON string, kept from the
// previous event and extended (events come in order; another order is
// made afresh).
func (rp *reply) sglangText(upTo int) []byte {
	if upTo < rp.sgWords || rp.sgText == nil {
		rp.sgText, rp.sgWords = append(rp.sgText[:0], '"'), 0
	}
	var word [64]byte
	for ; rp.sgWords < upTo; rp.sgWords++ {
		q := strconv.AppendQuote(word[:0], " "+tokenizer.Word(int(rp.h)+rp.sgWords))
		rp.sgText = append(rp.sgText, q[1:len(q)-1]...)
	}
	return append(rp.sgText, '"')
}

func (rp *reply) tgiDetails() string {
	return `{"finish_reason":"` + rp.finish + `","generated_tokens":` + strconv.Itoa(rp.n) + `,"seed":null}`
}

func (rp *reply) sglangMeta(done int, final bool) string {
	finish := `null`
	if final {
		finish = `{"type":"` + rp.finish + `"}`
		if rp.finish == "length" {
			finish = `{"type":"length","length":` + strconv.Itoa(rp.n) + `}`
		}
	}
	return `{"id":"` + rp.id() + `","finish_reason":` + finish + `,"prompt_tokens":` + strconv.Itoa(rp.isl) + `,"completion_tokens":` + strconv.Itoa(done) + `,"cached_tokens":0}`
}

// nativeEvent appends token k's event.
func (rp *reply) nativeEvent(buf []byte, k int) []byte {
	switch rp.sh.native {
	case nativeTriton:
		return rp.tritonEvent(buf, k)
	case nativeVLLM:
		return rp.vllmEvent(buf, k)
	case nativeSolido:
		return rp.solidoEvent(buf, k)
	}
	if k == rp.badAt {
		return append(buf, "data:{\"token\":{\"text\":\" broken\n\n"...) // faultMalformed
	}
	final := k == rp.n-1
	if rp.sh.native == nativeTGI {
		gen, details := `null`, `null`
		if final {
			gen, details = strconv.Quote(string(rp.words(rp.n))), rp.tgiDetails()
		}
		buf = append(buf, `data:{"index":`+strconv.Itoa(k+1)+`,"token":{"id":`+strconv.Itoa(1000+k)+`,"text":" `...)
		buf = append(buf, tokenizer.Word(int(rp.h)+k)...)
		return append(buf, `","logprob":-0.25,"special":false},"generated_text":`+gen+`,"details":`+details+"}\n\n"...)
	}
	buf = append(buf, `data: {"text":`...)
	buf = append(buf, rp.sglangText(k+1)...)
	return append(buf, `,"meta_info":`+rp.sglangMeta(k+1, final)+"}\n\n"...)
}

// nativeEnd ends a stream: SGLang's with [DONE]; TGI's last event was it.
func (rp *reply) nativeEnd(buf []byte) []byte {
	switch rp.sh.native {
	case nativeSGLang:
		return append(buf, "data: [DONE]\n\n"...)
	case nativeVLLM:
		return rp.vllmEnd(buf)
	}
	return buf
}

// nativeWhole is a whole answer.
func (rp *reply) nativeWhole(text []byte) string {
	switch rp.sh.native {
	case nativeTriton, nativeKServe:
		return rp.tritonWhole(text)
	case nativeVLLM:
		return rp.vllmWhole()
	case nativeSolido:
		return rp.solidoWhole(text)
	}
	if rp.sh.native == nativeTGI {
		return `{"generated_text":` + strconv.Quote(string(text)) + `,"details":` + rp.tgiDetails() + `}`
	}
	return `{"text":` + strconv.Quote(string(text)) + `,"meta_info":` + rp.sglangMeta(rp.n, true) + `}`
}
