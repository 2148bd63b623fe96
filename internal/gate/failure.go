package gate

// A gate that cannot run still answers on the pull request: its sticky
// comment, which may say ✅ for an earlier commit, is replaced by one that
// says what failed, with the error and the log's last lines.

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/action"
)

// Failure is a gate that could not reach a verdict, for its comment.
type Failure struct {
	Err  string // the error, as printed
	Log  string // the log's last lines
	Meta Meta   // Head, Base and RunURL
}

// Limits on what a failure's comment quotes.
const (
	failureErrBytes  = 4000
	failureLogLines  = 40
	failureLogBytes  = 4000
	failureTailBytes = 64 << 10 // the log kept to cut those from
)

// logTail keeps the last bytes written through it, passing all of them on.
type logTail struct {
	mu  sync.Mutex
	buf []byte
}

// tee is w, with what goes through it kept in t too.
func (t *logTail) tee(w io.Writer) io.Writer { return io.MultiWriter(w, t) }

func (t *logTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if n := len(t.buf); n > 2*failureTailBytes {
		t.buf = append(t.buf[:0], t.buf[n-failureTailBytes:]...)
	}
	return len(p), nil
}

// lines is the tail's last lines, without the runner's workflow commands
// (::add-mask:: and the like) and with secret cut out.
func (t *logTail) lines(secret string) string {
	t.mu.Lock()
	b := append([]byte(nil), t.buf...)
	t.mu.Unlock()
	var keep []string
	for _, l := range strings.Split(string(bytes.TrimRight(b, "\n")), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "::") {
			continue
		}
		keep = append(keep, l)
	}
	keep = keep[max(0, len(keep)-failureLogLines):]
	s := scrub(strings.Join(keep, "\n"), secret)
	if len(s) > failureLogBytes {
		s = "…" + s[len(s)-failureLogBytes:]
	}
	return s
}

// scrub cuts secret out of s.
func scrub(s, secret string) string {
	if secret != "" {
		s = strings.ReplaceAll(s, secret, "***")
	}
	return s
}

// postFailure replaces the pull request's sticky comment with one saying
// the gate could not run, when the gate would have commented. Its own
// failure is only printed: the job fails on the first error anyway.
func postFailure(env *action.Env, o Options, errText string, tail *logTail, w io.Writer) {
	if !env.InActions() || !env.IsPR() || env.PRNumber() == 0 || o.Mode != "gate" || o.Comment == "never" || env.Token == "" || o.Render == nil {
		return
	}
	if len(errText) > failureErrBytes {
		errText = errText[:failureErrBytes] + "…"
	}
	f := &Failure{Err: scrub(errText, env.Token), Log: tail.lines(env.Token),
		Meta: Meta{Head: env.HeadSHA(), Base: env.BaseSHA(), RunURL: env.RunURL(), Event: env.Ctx.EventName}}
	c, err := env.Client(o.HTTPClient)
	if err != nil {
		return
	}
	// Its own time: the gate's context may be what ran out.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	owner, repo := env.Repo()
	marker := o.Marker
	if marker == "" {
		marker = action.Marker
	}
	if _, err := action.StickyComment(ctx, c, owner, repo, env.PRNumber(), o.Render.Failure(f, action.MaxComment), marker); err != nil {
		io.WriteString(w, "aiperf-action gate: could not say so on the pull request: "+scrub(err.Error(), env.Token)+"\n")
	}
}
