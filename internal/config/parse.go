package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/aiperf-action/aiperf-action/internal/dataset"
)

// ParseExtraInputs parses --extra-inputs key:value pairs. A value that is
// valid JSON (true, 12, "x", {...}) is kept as that JSON; anything else is a
// string. The result marshals with sorted keys, so payloads are stable.
func ParseExtraInputs(pairs []string) (map[string]json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	var errs []error
	for _, kv := range pairs {
		k, v, ok := strings.Cut(kv, ":")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			errs = append(errs, fmt.Errorf("--extra-inputs %q: want key:value", kv))
			continue
		}
		v = strings.TrimSpace(v)
		switch {
		case json.Valid([]byte(v)):
			out[k] = json.RawMessage(v)
		case strings.HasPrefix(v, "[") || strings.HasPrefix(v, "{"):
			// Meant as JSON, and broken: sending it as a string would change
			// the request without a word.
			var x any
			err := json.Unmarshal([]byte(v), &x)
			errs = append(errs, fmt.Errorf("--extra-inputs %q: the value looks like JSON but is not: %v", kv, err))
		default:
			b, _ := json.Marshal(v)
			out[k] = b
		}
		if k == "stream" {
			errs = append(errs, fmt.Errorf("--extra-inputs %q: streaming is set by --streaming (and run.json records it); leave stream out of --extra-inputs", kv))
		}
	}
	return out, errors.Join(errs...)
}

// ParseSeqDist reads AIPerf's --sequence-distribution:
// "128,64:25;512,128:50;1024,256:25" is ISL 128 and OSL 64 for a quarter
// of the requests, and so on; "512|50,128|10:40" gives each a standard
// deviation. The weights need not add up to 100. "" is no mixture.
func ParseSeqDist(s string) ([]dataset.Bucket, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	bad := func(part, why string) error {
		return fmt.Errorf("--sequence-distribution %q: %q: %s (want isl[|stddev],osl[|stddev]:weight;...)", s, part, why)
	}
	num := func(v string) (float64, error) { return strconv.ParseFloat(strings.TrimSpace(v), 64) }
	lenStd := func(v string) (int, float64, bool) {
		mean, std, _ := strings.Cut(v, "|")
		m, err := strconv.Atoi(strings.TrimSpace(mean))
		if err != nil || m < 1 {
			return 0, 0, false
		}
		if std == "" {
			return m, 0, true
		}
		sd, err := num(std)
		return m, sd, err == nil && sd >= 0
	}
	var out []dataset.Bucket
	for _, part := range strings.Split(s, ";") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		lens, w, ok := strings.Cut(part, ":")
		if !ok {
			return nil, bad(part, "no weight")
		}
		weight, err := num(w)
		if err != nil || !(weight > 0) || math.IsInf(weight, 0) {
			return nil, bad(part, "the weight must be a positive number")
		}
		is, os, ok := strings.Cut(lens, ",")
		if !ok {
			return nil, bad(part, "want an input and an output length")
		}
		isl, islStd, ok1 := lenStd(is)
		osl, oslStd, ok2 := lenStd(os)
		if !ok1 || !ok2 {
			return nil, bad(part, "lengths must be positive whole numbers, their stddevs not negative")
		}
		out = append(out, dataset.Bucket{ISL: isl, OSL: osl, ISLStd: islStd, OSLStd: oslStd, Weight: weight})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--sequence-distribution %q: no buckets", s)
	}
	return out, nil
}
