// Package percent is the one reading of a percentage that every flag and
// config key shares: "5%", "5" (percent) or "0.05" (a fraction below 1).
package percent

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Parse reads s as a fraction; errors name flag.
func Parse(flag, s string) (float64, error) {
	t := strings.TrimSpace(s)
	pct := strings.HasSuffix(t, "%")
	t = strings.TrimSuffix(t, "%")
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%s %q: want a percentage such as 5%%", flag, s)
	}
	if pct || v >= 1 {
		v /= 100
	}
	return v, nil
}
