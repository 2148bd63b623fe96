package sim

import (
	"encoding/json"
	"strconv"

	"github.com/aiperf-action/aiperf-action/internal/tokenizer"
)

// Triton's generate extension and the KServe v2 infer API, as Triton's
// TensorRT-LLM and vLLM backends answer them: /v2/models/{model}/generate
// and /generate_stream (SSE of text_output deltas, no [DONE]), and
// /v2/models/{model}/infer (a text_output BYTES tensor).

var (
	tritonShape = shape{name: "triton_generate", native: nativeTriton}
	kserveShape = shape{name: "kserve", native: nativeKServe}
)

func (rp *reply) tritonHead() string {
	return `{"model_name":` + rp.modelJSON + `,"model_version":"1","sequence_end":false,"sequence_id":0,"sequence_start":false,"text_output":`
}

// tritonEvent is token k's event.
func (rp *reply) tritonEvent(buf []byte, k int) []byte {
	if k == rp.badAt {
		return append(buf, "data: {\"text_output\":\" broken\n\n"...) // faultMalformed
	}
	buf = append(buf, "data: "...)
	buf = append(buf, rp.tritonHead()...)
	buf = strconv.AppendQuote(buf, " "+tokenizer.Word(int(rp.h)+k))
	return append(buf, "}\n\n"...)
}

// tritonWhole is a whole generate answer, or a KServe infer one.
func (rp *reply) tritonWhole(text []byte) string {
	if rp.sh.native == nativeKServe {
		data, _ := json.Marshal([]string{string(text)})
		return `{"model_name":` + rp.modelJSON + `,"model_version":"1","outputs":[{"name":"text_output","datatype":"BYTES","shape":[1,1],"data":` + string(data) + `}]}`
	}
	return rp.tritonHead() + strconv.Quote(string(text)) + `}`
}

// kserveTensors takes a KServe v2 request's text_input and max_tokens
// tensors into req's fields.
func kserveTensors(req *request) {
	var tensors []struct {
		Name string            `json:"name"`
		Data []json.RawMessage `json:"data"`
	}
	if json.Unmarshal(req.Inputs, &tensors) != nil {
		return
	}
	req.Inputs = nil
	for _, t := range tensors {
		if len(t.Data) == 0 {
			continue
		}
		switch t.Name {
		case "text_input":
			req.TextInput = t.Data[0]
		case "max_tokens":
			var n int
			if json.Unmarshal(t.Data[0], &n) == nil {
				req.MaxTokens = &n
			}
		}
	}
}
