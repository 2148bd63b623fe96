package schedule

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/aiperf-action/aiperf-action/internal/tokenizer"
)

// Fresh is the body of the entry's use in cycle c of its pool: from the
// second cycle on, its first word, the o-th of the plan's words v, is
// replaced by the (o+c)-th, so that no request of the first v.Len() cycles
// resends an earlier one's prompt (and hits the server's prefix cache)
// while every length stays: each word is one token.
func (e Entry) Fresh(c int, v *tokenizer.Vocab) json.RawMessage {
	if c == 0 || e.FreshAt == 0 || e.FreshAt-1+e.FreshLen > len(e.Body) {
		return e.Body
	}
	if v == nil {
		v = tokenizer.Builtin().Words()
	}
	at := e.FreshAt - 1
	var w string
	if e.FreshID {
		id, err := strconv.Atoi(string(e.Body[at : at+e.FreshLen]))
		o, spaced, ok := v.OfID(id)
		if err != nil || !ok {
			return e.Body
		}
		w = strconv.Itoa(v.ID(o+c, spaced))
	} else {
		o, ok := v.Index(string(e.Body[at : at+e.FreshLen]))
		if !ok {
			return e.Body
		}
		w = v.Word(o + c)
	}
	out := make([]byte, 0, len(e.Body)-e.FreshLen+len(w))
	out = append(append(append(out, e.Body[:at]...), w...), e.Body[at+e.FreshLen:]...)
	return out
}

// nthID is where the k-th id of a body's "token_ids" list sits (at, and
// its length n; at −1 when it has none).
func nthID(body []byte, k int) (at, n int) {
	key := []byte(`"token_ids":[`)
	i := bytes.Index(body, key)
	if i < 0 {
		return -1, 0
	}
	at = i + len(key)
	for ; k > 0; k-- {
		j := bytes.IndexByte(body[at:], ',')
		if j < 0 {
			return -1, 0
		}
		at += j + 1
	}
	for n = 0; at+n < len(body) && body[at+n] >= '0' && body[at+n] <= '9'; n++ {
	}
	return at, n
}

// locateFresh sets where e's prompt's first word sits in its body req, in
// a cycling pool of synthetic prompts, so that the worker can give every
// cycle after the first its own first word (a prompt sent again would
// otherwise be served from the server's prefix cache). own is the
// prompt's own text, after any prefix (which is meant to be served from
// the cache), and text the whole prompt; ids are a tokens-in body's ids.
func locateFresh(e *Entry, req []byte, text, own string, ids []int, v *tokenizer.Vocab) {
	if ids != nil {
		// A tokens-in body: the first word's id, the k-th of the list (the
		// words of own are its last ids, one each).
		if k := len(ids) - (strings.Count(own, " ") + 1); k >= 0 && k < len(ids) {
			if _, _, word := v.OfID(ids[k]); word {
				if at, n := nthID(req, k); at >= 0 && string(req[at:at+n]) == strconv.Itoa(ids[k]) {
					e.FreshAt, e.FreshLen, e.FreshID = at+1, n, true
				}
			}
		}
		return
	}
	first, _, _ := strings.Cut(own, " ")
	if _, word := v.Index(first); word {
		if at := bytes.Index(req, []byte(text)); at >= 0 {
			at += len(text) - len(own)
			e.FreshAt, e.FreshLen = at+1, len(first)
		}
	}
}
