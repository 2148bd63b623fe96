package rxtime

import (
	"testing"
	"time"
)

func TestAge(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	for _, c := range []struct {
		rx     time.Time
		want   time.Duration
		wantOK bool
	}{
		{now.Add(-5 * time.Second), 5 * time.Second, true},
		{now, 0, true},
		{now.Add(time.Millisecond), 0, true}, // the clock stepped back
		{now.Add(-20 * time.Second), 20 * time.Second, false},
	} {
		if d, ok := Age(c.rx.UnixNano(), now, 10*time.Second); d != c.want || ok != c.wantOK {
			t.Errorf("Age(now%+v) = %v, %v; want %v, %v", c.rx.Sub(now), d, ok, c.want, c.wantOK)
		}
	}
}
