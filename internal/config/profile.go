// Package config holds the run's configuration as plain structs with
// defaults and a Validate method that reports every problem at once.
//
// Field names mirror AIPerf's flags (the CLI binds flags straight into these
// fields), so one vocabulary serves the CLI, the gate config and the action.
package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// Endpoint types.
const (
	EndpointChat        = "chat"
	EndpointCompletions = "completions"
)

// Profile is one load profile: what to send, where, and how hard.
type Profile struct {
	Model        string // -m/--model: the model name put in every request
	URL          string // -u/--url: server base URL (scheme optional)
	Endpoint     string // --endpoint: custom path; default from EndpointType
	EndpointType string // --endpoint-type: chat | completions
	Streaming    bool   // --streaming

	Concurrency  int // --concurrency: in-flight requests (closed loop)
	RequestCount int // --request-count

	ISLMean   int     // --synthetic-input-tokens-mean / --isl
	ISLStddev float64 // --synthetic-input-tokens-stddev
	OSLMean   int     // --output-tokens-mean / --osl; 0 leaves max_tokens unset
	OSLStddev float64 // --output-tokens-stddev

	ExtraInputs []string // --extra-inputs key:value, repeatable
	Headers     []string // -H/--header "Name: value", repeatable
	APIKey      string   // --api-key, sent as a bearer token

	Seed    uint64 // --random-seed
	SeedSet bool   // whether Seed was given; when not, one is drawn and stored

	RequestTimeoutSeconds float64 // --request-timeout-seconds
	ArtifactDir           string  // --artifact-dir
	Goodput               string  // --goodput "metric:value ..."
	Workers               int     // --workers; 0 picks a default from CPUs and concurrency
	MaxErrorRate          float64 // --max-error-rate, percent of requests
	SliceDuration         float64 // --slice-duration: seconds per metrics window
}

// DefaultProfile holds AIPerf's defaults where AIPerf has one.
var DefaultProfile = Profile{
	EndpointType:          EndpointChat,
	Concurrency:           1,
	RequestCount:          10,
	ISLMean:               550,
	RequestTimeoutSeconds: 600,
	MaxErrorRate:          10,
	SliceDuration:         5,
}

// Validate reports every problem with p at once, each naming its flag.
func (p *Profile) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if strings.TrimSpace(p.Model) == "" {
		bad("-m/--model is required")
	}
	if _, err := p.TargetURL(); err != nil {
		bad("-u/--url: %v", err)
	}
	switch p.EndpointType {
	case EndpointChat, EndpointCompletions:
	default:
		bad("--endpoint-type %q: want chat or completions", p.EndpointType)
	}
	if p.Concurrency < 1 {
		bad("--concurrency %d: must be at least 1", p.Concurrency)
	}
	if p.RequestCount < 1 {
		bad("--request-count %d: must be at least 1", p.RequestCount)
	}
	if p.ISLMean < 1 {
		bad("--synthetic-input-tokens-mean %d: must be at least 1", p.ISLMean)
	}
	if p.ISLStddev < 0 {
		bad("--synthetic-input-tokens-stddev %g: must not be negative", p.ISLStddev)
	}
	if p.OSLMean < 0 {
		bad("--output-tokens-mean %d: must not be negative", p.OSLMean)
	}
	if p.OSLStddev < 0 {
		bad("--output-tokens-stddev %g: must not be negative", p.OSLStddev)
	}
	if _, err := ParseExtraInputs(p.ExtraInputs); err != nil {
		errs = append(errs, err)
	}
	if _, err := ParseHeaders(p.Headers); err != nil {
		errs = append(errs, err)
	}
	if !(p.RequestTimeoutSeconds > 0) {
		bad("--request-timeout-seconds %g: must be positive", p.RequestTimeoutSeconds)
	}
	if _, err := ParseGoodput(p.Goodput); err != nil {
		errs = append(errs, err)
	}
	if p.Workers < 0 {
		bad("--workers %d: must not be negative (0 picks a default)", p.Workers)
	}
	if p.MaxErrorRate < 0 || p.MaxErrorRate > 100 {
		bad("--max-error-rate %g: must be a percentage in [0, 100]", p.MaxErrorRate)
	}
	if !(p.SliceDuration > 0) {
		bad("--slice-duration %g: must be positive", p.SliceDuration)
	}
	return errors.Join(errs...)
}

// TargetURL is the full URL requests are posted to. A URL without a scheme
// gets http://; a URL without a path gets the endpoint type's default path
// (or --endpoint when given).
func (p *Profile) TargetURL() (string, error) {
	raw := strings.TrimSpace(p.URL)
	if raw == "" {
		return "", errors.New("is required")
	}
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("%q: scheme must be http or https", p.URL)
	}
	if u.Host == "" {
		return "", fmt.Errorf("%q: no host", p.URL)
	}
	path := p.Endpoint
	if path == "" && (u.Path == "" || u.Path == "/") {
		path = DefaultPath(p.EndpointType)
	}
	if path != "" {
		u.Path = "/" + strings.TrimLeft(path, "/")
	}
	return u.String(), nil
}

// DefaultPath is the OpenAI path for an endpoint type.
func DefaultPath(endpointType string) string {
	if endpointType == EndpointCompletions {
		return "/v1/completions"
	}
	return "/v1/chat/completions"
}

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
		if json.Valid([]byte(v)) {
			out[k] = json.RawMessage(v)
		} else {
			b, _ := json.Marshal(v)
			out[k] = b
		}
	}
	return out, errors.Join(errs...)
}

// ParseHeaders parses -H "Name: value" (or Name:value) headers.
func ParseHeaders(hs []string) ([][2]string, error) {
	var out [][2]string
	var errs []error
	for _, h := range hs {
		k, v, ok := strings.Cut(h, ":")
		k = strings.TrimSpace(k)
		if !ok || k == "" || strings.ContainsAny(k, " \t") {
			errs = append(errs, fmt.Errorf("-H/--header %q: want \"Name: value\"", h))
			continue
		}
		out = append(out, [2]string{k, strings.TrimSpace(v)})
	}
	return out, errors.Join(errs...)
}

// SLO is one goodput objective: a request is good when its metric is within
// Value (at most Value for latencies, at least Value for per-user throughput).
type SLO struct {
	Metric string
	Value  float64 // in the metric's display unit (ms, or tokens/sec/user)
}

// GoodputMetrics are the record metrics --goodput accepts, with whether a
// higher value is better.
var GoodputMetrics = map[string]bool{
	"time_to_first_token":              false,
	"time_to_second_token":             false,
	"inter_token_latency":              false,
	"request_latency":                  false,
	"output_token_throughput_per_user": true,
}

// ParseGoodput parses --goodput "metric:value metric:value".
func ParseGoodput(s string) ([]SLO, error) {
	var out []SLO
	var errs []error
	for _, f := range strings.Fields(s) {
		k, v, ok := strings.Cut(f, ":")
		if !ok {
			errs = append(errs, fmt.Errorf("--goodput %q: want metric:value", f))
			continue
		}
		if _, known := GoodputMetrics[k]; !known {
			names := make([]string, 0, len(GoodputMetrics))
			for n := range GoodputMetrics {
				names = append(names, n)
			}
			sort.Strings(names)
			errs = append(errs, fmt.Errorf("--goodput %q: unknown metric %q (want one of %s)", f, k, strings.Join(names, ", ")))
			continue
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || !(x > 0) {
			errs = append(errs, fmt.Errorf("--goodput %q: value must be a positive number", f))
			continue
		}
		out = append(out, SLO{Metric: k, Value: x})
	}
	return out, errors.Join(errs...)
}
