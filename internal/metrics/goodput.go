package metrics

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// SLO is one goodput objective: a request is good when its metric is within
// Value (at most Value for a latency, at least Value for per-user
// throughput: the metric's Fact says which).
type SLO struct {
	Metric string
	Value  float64 // in the metric's display unit (ms, or tokens/sec/user)
}

// GoodputMetrics are the record metrics --goodput accepts, sorted by name.
var GoodputMetrics = []string{ITL, PerUser, RequestLatency, TTFT, TTST}

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
		if !goodputMetric(k) {
			errs = append(errs, fmt.Errorf("--goodput %q: unknown metric %q (want one of %s)", f, k, strings.Join(GoodputMetrics, ", ")))
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

func goodputMetric(name string) bool {
	for _, n := range GoodputMetrics {
		if n == name {
			return true
		}
	}
	return false
}

// Good reports whether a record's metrics meet every SLO. With no SLOs,
// every successful request is good.
func Good(vals map[string]float64, slos []SLO) bool {
	for _, s := range slos {
		v, ok := vals[s.Metric]
		if !ok {
			return false
		}
		if f, _ := Lookup(s.Metric); f.HigherIsBetter {
			if v < s.Value {
				return false
			}
		} else if v > s.Value {
			return false
		}
	}
	return true
}
