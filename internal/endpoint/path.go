package endpoint

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// pathText is the hot path's reading of the string at a field path
// (object keys, and indexes into arrays) in one JSON event, without a
// decode: one walk that skips what is off the path. It gives what
// textAt gives on the decoded event (a missing or null field is no text,
// a number its JSON as written, a bool its name, an object or array none)
// or ok false where it can't vouch for that: a key with an escape, a key
// twice in an object on the path, a value it can't skip. Well-formedness
// is the caller's check (wellFormed).
func pathText(b []byte, path []string) (text []byte, ok bool) {
	i := skipSpace(b, 0)
	for _, p := range path {
		if i >= len(b) {
			return nil, false
		}
		switch b[i] {
		case '{':
			at, found, ok := objectField(b, i, p)
			if !ok {
				return nil, false
			}
			if !found {
				return nil, true
			}
			i = at
		case '[':
			n, err := strconv.Atoi(p)
			if err != nil || n < 0 {
				return nil, true // (textAt: no such index)
			}
			at, found, ok := arrayElem(b, i, n)
			if !ok {
				return nil, false
			}
			if !found {
				return nil, true
			}
			i = at
		default:
			return nil, true // a scalar where the path goes on: no text
		}
	}
	if i >= len(b) {
		return nil, false
	}
	end := skipValue(b, i)
	if end < 0 {
		return nil, false
	}
	v := b[i:end]
	switch v[0] {
	case '"':
		if bytes.IndexByte(v, '\\') >= 0 {
			var s string
			if json.Unmarshal(v, &s) != nil {
				return nil, false
			}
			return []byte(s), true
		}
		if !utf8.Valid(v) {
			return nil, false // (the decoder makes U+FFFD of bad bytes)
		}
		return v[1 : len(v)-1], true
	case '{', '[', 'n':
		return nil, true // an object, an array, null: no text
	}
	return v, true // a number as written, true or false
}

// objectField finds key's value in the object at b[i] ('{'): at its first
// byte. ok is false where a key has an escape or key comes twice (the
// decoder keeps the last).
func objectField(b []byte, i int, key string) (at int, found, ok bool) {
	i++
	for {
		i = skipSpace(b, i)
		if i >= len(b) {
			return 0, false, false
		}
		if b[i] == '}' {
			return at, found, true
		}
		if b[i] == ',' {
			i = skipSpace(b, i+1)
		}
		if i >= len(b) || b[i] != '"' {
			return 0, false, false
		}
		end, escaped := stringEnd(b[i:])
		if end < 0 || escaped {
			return 0, false, false
		}
		k := b[i+1 : i+end]
		if !utf8.Valid(k) {
			return 0, false, false
		}
		i = skipSpace(b, i+end+1)
		if i >= len(b) || b[i] != ':' {
			return 0, false, false
		}
		i = skipSpace(b, i+1)
		if string(k) == key {
			if found {
				return 0, false, false
			}
			at, found = i, true
		}
		if i = skipValue(b, i); i < 0 {
			return 0, false, false
		}
	}
}

// arrayElem finds element n of the array at b[i] ('['): at its first byte.
func arrayElem(b []byte, i, n int) (at int, found, ok bool) {
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return 0, false, true
	}
	for k := 0; ; k++ {
		if i >= len(b) {
			return 0, false, false
		}
		if k == n {
			return i, true, true
		}
		if i = skipValue(b, i); i < 0 {
			return 0, false, false
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return 0, false, false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case ']':
			return 0, false, true
		default:
			return 0, false, false
		}
	}
}

// skipValue is the index just past the JSON value at b[i], or −1.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		end, _ := stringEnd(b[i:])
		if end < 0 {
			return -1
		}
		return i + end + 1
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				end, _ := stringEnd(b[i:])
				if end < 0 {
					return -1
				}
				i += end
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return -1
	}
	j := i // a number or a literal: up to what ends it
	for ; j < len(b); j++ {
		if c := b[j]; c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\r' || c == '\n' {
			break
		}
	}
	if j == i {
		return -1
	}
	return j
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}
