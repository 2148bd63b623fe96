package tokenizer

// A tokenizer.json's normalizers and pre-tokenizers: what a piece of text
// goes through before its byte-level BPE merges (hf.go).

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dlclark/regexp2/v2"
	"golang.org/x/text/unicode/norm"
)

// preStep splits a piece into pieces.
type preStep func(s string) []string

func typeOf(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", false
	}
	var t struct {
		Type string `json:"type"`
	}
	json.Unmarshal(raw, &t)
	return t.Type, true
}

func normalizer(raw json.RawMessage) (func(string) string, error) {
	typ, ok := typeOf(raw)
	if !ok {
		return nil, nil
	}
	switch typ {
	case "NFC":
		return norm.NFC.String, nil
	case "NFD":
		return norm.NFD.String, nil
	case "NFKC":
		return norm.NFKC.String, nil
	case "NFKD":
		return norm.NFKD.String, nil
	case "Lowercase":
		return strings.ToLower, nil
	case "Sequence":
		var s struct {
			Normalizers []json.RawMessage `json:"normalizers"`
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("normalizer: %v", err)
		}
		var fs []func(string) string
		for _, n := range s.Normalizers {
			f, err := normalizer(n)
			if err != nil {
				return nil, err
			}
			if f != nil {
				fs = append(fs, f)
			}
		}
		return func(s string) string {
			for _, f := range fs {
				s = f(s)
			}
			return s
		}, nil
	}
	return nil, fmt.Errorf("normalizer %q is not supported (NFC, NFD, NFKC, NFKD, Lowercase and Sequence are)", typ)
}

// gpt2Split is the ByteLevel pre-tokenizer's own regular expression (with
// use_regex), GPT-2's.
const gpt2Split = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

func preTokenizer(raw json.RawMessage, byteLevel *bool) ([]preStep, error) {
	typ, ok := typeOf(raw)
	if !ok {
		return nil, nil
	}
	switch typ {
	case "Sequence":
		var s struct {
			Pretokenizers []json.RawMessage `json:"pretokenizers"`
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("pre_tokenizer: %v", err)
		}
		var steps []preStep
		for _, p := range s.Pretokenizers {
			st, err := preTokenizer(p, byteLevel)
			if err != nil {
				return nil, err
			}
			steps = append(steps, st...)
		}
		return steps, nil
	case "ByteLevel":
		var b struct {
			AddPrefixSpace bool  `json:"add_prefix_space"`
			UseRegex       *bool `json:"use_regex"`
		}
		if err := json.Unmarshal(raw, &b); err != nil {
			return nil, fmt.Errorf("pre_tokenizer ByteLevel: %v", err)
		}
		*byteLevel = true
		var steps []preStep
		if b.AddPrefixSpace {
			steps = append(steps, func(s string) []string {
				if !strings.HasPrefix(s, " ") {
					s = " " + s
				}
				return []string{s}
			})
		}
		if b.UseRegex == nil || *b.UseRegex { // (the library's default is true)
			re := regexp2.MustCompile(alternativesGrouped(gpt2Split), regexp2.None)
			steps = append(steps, splitStep(re, "Isolated"))
		}
		return steps, nil
	case "Split":
		var s struct {
			Pattern struct {
				Regex  *string `json:"Regex"`
				String *string `json:"String"`
			} `json:"pattern"`
			Behavior string `json:"behavior"`
			Invert   bool   `json:"invert"`
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("pre_tokenizer Split: %v", err)
		}
		if s.Invert {
			return nil, fmt.Errorf("pre_tokenizer Split with invert is not supported")
		}
		switch s.Behavior {
		case "Isolated", "Removed", "MergedWithPrevious", "MergedWithNext", "Contiguous":
		default:
			return nil, fmt.Errorf("pre_tokenizer Split behavior %q is not supported", s.Behavior)
		}
		var pat string
		switch {
		case s.Pattern.Regex != nil:
			pat = *s.Pattern.Regex
		case s.Pattern.String != nil:
			pat = regexp2.Escape(*s.Pattern.String)
		default:
			return nil, fmt.Errorf("pre_tokenizer Split: no pattern")
		}
		re, err := regexp2.Compile(alternativesGrouped(pat), regexp2.None)
		if err != nil {
			return nil, fmt.Errorf("pre_tokenizer Split: pattern %q: %v", pat, err)
		}
		step := splitStep(re, s.Behavior)
		if kind := fastSplitFor(pat); kind != splitNone && s.Behavior == "Isolated" {
			// (A pattern the hand-written splitter follows: it takes ASCII
			// pieces, the engine the rest.)
			step = func(t string) []string {
				var out []string
				splitMixed(t, kind, func(u string, yield func(string)) error { return engineSplit(re, u, yield) },
					func(p string) { out = append(out, p) })
				return out
			}
		}
		return []preStep{step}, nil
	case "Digits":
		var d struct {
			IndividualDigits bool `json:"individual_digits"`
		}
		json.Unmarshal(raw, &d)
		pat := `\p{N}+`
		if d.IndividualDigits {
			pat = `\p{N}`
		}
		return []preStep{splitStep(regexp2.MustCompile(pat, regexp2.None), "Isolated")}, nil
	}
	return nil, fmt.Errorf("pre_tokenizer %q is not supported (ByteLevel, Split, Digits and Sequence are)", typ)
}

// splitStep splits at re's matches, keeping them as behavior says (the
// tokenizers library's SplitDelimiterBehavior). Empty pieces are dropped.
func splitStep(re *regexp2.Regexp, behavior string) preStep {
	return func(s string) []string {
		runes := []rune(s)
		type span struct {
			lo, hi int
			match  bool
		}
		var spans []span
		at := 0
		m, _ := re.FindRunesMatch(runes)
		for m != nil {
			lo, hi := m.RuneIndex, m.RuneIndex+m.RuneLength
			if lo > at {
				spans = append(spans, span{at, lo, false})
			}
			if hi > lo {
				spans = append(spans, span{lo, hi, true})
			}
			at = hi
			m, _ = re.FindNextMatch(m)
		}
		if at < len(runes) {
			spans = append(spans, span{at, len(runes), false})
		}
		var out []string
		text := func(sp span) string { return string(runes[sp.lo:sp.hi]) }
		switch behavior {
		case "Isolated":
			for _, sp := range spans {
				out = append(out, text(sp))
			}
		case "Removed":
			for _, sp := range spans {
				if !sp.match {
					out = append(out, text(sp))
				}
			}
		case "MergedWithPrevious":
			for _, sp := range spans {
				if sp.match && len(out) > 0 {
					out[len(out)-1] += text(sp)
				} else {
					out = append(out, text(sp))
				}
			}
		case "MergedWithNext":
			pending := ""
			for _, sp := range spans {
				if sp.match {
					pending += text(sp)
				} else {
					out = append(out, pending+text(sp))
					pending = ""
				}
			}
			if pending != "" {
				out = append(out, pending)
			}
		case "Contiguous":
			for k, sp := range spans {
				if sp.match && k > 0 && spans[k-1].match {
					out[len(out)-1] += text(sp)
				} else {
					out = append(out, text(sp))
				}
			}
		}
		return out
	}
}
