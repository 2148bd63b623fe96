package percent

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		want float64
	}{{"5%", 0.05}, {"5", 0.05}, {"0.05", 0.05}, {" 12.5% ", 0.125}, {"0", 0}, {"1", 0.01}, {"150%", 1.5}} {
		if got, err := Parse("--x", c.in); err != nil || got != c.want {
			t.Errorf("%q: %g, %v; want %g", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"", "-1%", "five", "Inf", "5%%"} {
		if _, err := Parse("--max-regression", in); err == nil || !strings.HasPrefix(err.Error(), "--max-regression ") {
			t.Errorf("%q: %v, want an error naming the flag", in, err)
		}
	}
}
