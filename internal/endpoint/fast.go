package endpoint

import (
	"bytes"
	"encoding/json"
	"errors"
)

// Scan is the hot path's chunk reader: it finds a streamed OpenAI chunk's
// generated text without decoding the JSON: the reasoning first (the keys
// "reasoning_content" and "reasoning"; content[:reasoning]), then the
// answer ("content" and "text"). Keys are matched only where a key can stand
// (an unescaped quote, the name, a quote and a colon: inside a JSON string
// every quote is escaped), and their string values are returned as raw
// bytes, unescaped only when they hold a backslash. A chunk that carries a
// usage object or an error falls back to the full decoder, since a metric
// needs those. The returned slice may alias data.
func Scan(data []byte, buf []byte) (content []byte, reasoning int, full *Chunk, err error) {
	return scan(data, buf, scanKeys, answerKeys, parseOpenAI)
}

// scan is Scan over any JSON event: the string values of keys (those from
// answerFrom on are the answer's, those before the reasoning's), and a full
// decode where the event carries a usage object or an error.
func scan(data, buf []byte, keys [][]byte, answerFrom int, decode func([]byte) (Chunk, error)) (content []byte, reasoning int, full *Chunk, err error) {
	var w walk
	ok := w.run(data, keys)
	if ok && !w.full {
		return w.assemble(data, buf, keys, answerFrom)
	}
	c, err := decode(data)
	if err != nil {
		return nil, 0, nil, err
	}
	if !ok {
		return nil, 0, nil, errors.New("not a JSON object")
	}
	return []byte(c.Reasoning + c.Content), len(c.Reasoning), &c, nil
}

// walk is scan's one pass over an event: it checks the event is whole
// (wellFormed's rules) and, on the way, notes the string value of every
// key asked for, and whether the event carries a usage object or an
// error, which need the full decoder. A key is a string followed by a
// colon: inside a JSON string every quote is escaped, so a value never
// passes for one.
type walk struct {
	hits [8]hit
	n    int
	full bool // a usage object or an error key, or more hits than kept
}

type hit struct {
	key, lo, hi int // keys[key]'s value is data[lo:hi], quotes included
	escaped     bool
}

var (
	usageKey = []byte("usage")
	errorKey = []byte("error")
)

func (w *walk) run(data []byte, keys [][]byte) bool {
	b := data
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	start := 0
	for start < len(b) && isSpace(b[start]) {
		start++
	}
	if len(b)-start < 2 || b[start] != '{' || b[len(b)-1] != '}' {
		return false
	}
	var open [32]byte
	depth := 0
	for i := start; i < len(b); i++ {
		switch c := b[i]; c {
		case '"':
			end, _ := stringEnd(b[i:])
			if end < 0 {
				return false
			}
			if keys != nil {
				j := i + end + 1
				for j < len(b) && isSpace(b[j]) {
					j++
				}
				if j < len(b) && b[j] == ':' {
					if v, ok := w.key(b, b[i+1:i+end], j+1, keys); ok {
						i = v // past the value taken
						continue
					}
				}
			}
			i += end
		case '{', '[':
			if depth == len(open) {
				w.full = true // deeper than any chunk: the decoder's
				return json.Valid(b)
			}
			open[depth] = c
			depth++
		case '}', ']':
			if depth == 0 || open[depth-1] != c-2 { // '{'+2 == '}', '['+2 == ']'
				return false
			}
			depth--
			if depth == 0 && i != len(b)-1 {
				return false
			}
		}
	}
	return depth == 0
}

// key takes the key name whose value starts after the colon at from: a
// usage object or an error means a full decode; one of keys with a string
// value is noted. It returns the index of the value's closing quote when
// it took a string value.
func (w *walk) key(b, name []byte, from int, keys [][]byte) (int, bool) {
	v := from
	for v < len(b) && isSpace(b[v]) {
		v++
	}
	switch {
	case bytes.Equal(name, errorKey):
		w.full = true
	case bytes.Equal(name, usageKey) && v < len(b) && b[v] == '{':
		w.full = true
	}
	if v >= len(b) || b[v] != '"' {
		return 0, false
	}
	for k, key := range keys {
		if len(key) != len(name)+3 || !bytes.Equal(key[1:len(key)-2], name) {
			continue
		}
		end, escaped := stringEnd(b[v:])
		if end < 0 {
			return 0, false
		}
		if w.n == len(w.hits) {
			w.full = true // (more values than any chunk has: the decoder's)
		} else {
			w.hits[w.n] = hit{k, v, v + end + 1, escaped}
			w.n++
		}
		return v + end, true
	}
	return 0, false
}

// assemble joins the values noted, key by key in keys' order (so the
// reasoning comes first), each in the order it came; one unescaped value
// is returned as it stands in data, without a copy.
func (w *walk) assemble(data, buf []byte, keys [][]byte, answerFrom int) ([]byte, int, *Chunk, error) {
	out := buf[:0]
	aliased := false
	reasoning := 0
	for k := range keys {
		if k == answerFrom {
			reasoning = len(out)
		}
		for _, h := range w.hits[:w.n] {
			if h.key != k {
				continue
			}
			if aliased { // a second value: stop aliasing data before appending
				out = append(buf[:0], out...)
				aliased = false
			}
			switch {
			case h.escaped:
				var s string
				if err := json.Unmarshal(data[h.lo:h.hi], &s); err != nil {
					return nil, 0, nil, err
				}
				out = append(out, s...)
			case len(out) == 0:
				out, aliased = data[h.lo+1:h.hi-1], true
			default:
				out = append(out, data[h.lo+1:h.hi-1]...)
			}
		}
	}
	return out, reasoning, nil, nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// scanKeys are the keys whose string values Scan returns, in order: the
// reasoning ones, then, from answerKeys on, the answer's.
var scanKeys = [][]byte{[]byte(`"reasoning_content":`), []byte(`"reasoning":`), []byte(`"content":`), []byte(`"text":`)}

const answerKeys = 2

// wellFormed is the hot path's check that a chunk is whole: one object,
// its strings closed, its braces and brackets paired, nothing after it.
// It costs a fraction of json.Valid (BenchmarkWellFormed) and catches what goes wrong on a wire, a cut or a merged chunk; a chunk
// that passes it but is not JSON is taken for what its keys say.
func wellFormed(b []byte) bool {
	var w walk // (with no keys the walk is only the check)
	return w.run(b, nil)
}

// stringEnd finds the closing quote of the JSON string starting at s[0].
func stringEnd(s []byte) (end int, escaped bool) {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			escaped = true
			i++
		case '"':
			return i, escaped
		}
	}
	return -1, escaped
}
