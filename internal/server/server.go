// Package server brings a target inference server up and down.
//
// The command runs in its own process group, so teardown reaches every
// process it started (a launcher script, its model server, their workers).
// Readiness is polled with backoff until a deadline; an early exit, a
// timeout or a teardown is reported with the last lines of the server's
// log. The command line is split into words here and executed directly:
// no shell ever sees it.
package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/proc"
)

// Config says how to start and probe a server.
type Config struct {
	Command  string        // the server's command line (split into words, no shell)
	ReadyURL string        // polled until it answers 2xx
	Timeout  time.Duration // readiness deadline
	Log      io.Writer     // the server's stdout and stderr, as they come (may be nil)
	Env      []string      // extra environment, KEY=value
}

// Server is a running server.
type Server struct {
	cmd    *exec.Cmd
	tail   *tail
	exited chan struct{}
	err    error // the process's exit, once exited is closed
	once   sync.Once
}

// Start starts the command and waits until ReadyURL answers, the command
// exits, ctx ends, or Timeout passes. On any failure the process group is
// already torn down when Start returns.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	argv, err := SplitWords(cfg.Command)
	if err != nil {
		return nil, fmt.Errorf("server-command: %w", err)
	}
	if len(argv) == 0 {
		return nil, errors.New("server-command is empty")
	}
	s := &Server{tail: &tail{max: 40}, exited: make(chan struct{})}
	var out io.Writer = s.tail
	if cfg.Log != nil {
		out = io.MultiWriter(s.tail, cfg.Log)
	}
	s.cmd = exec.Command(argv[0], argv[1:]...)
	s.cmd.Stdout, s.cmd.Stderr = out, out
	s.cmd.Env = append(WithoutSecrets(os.Environ()), cfg.Env...)
	proc.Child(s.cmd)
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("server-command %q: %w", argv[0], err)
	}
	go func() {
		s.err = s.cmd.Wait()
		close(s.exited)
	}()
	if err := s.waitReady(ctx, cfg); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

func (s *Server) waitReady(ctx context.Context, cfg Config) error {
	_, err := poll(ctx, []string{cfg.ReadyURL}, cfg.Timeout, s.exited)
	switch {
	case errors.Is(err, errGone):
		return fmt.Errorf("server exited before it was ready (%v); last log lines:\n%s", exitText(s.err), s.tail.String())
	case errors.Is(err, errNotReady):
		return fmt.Errorf("server not ready at %s after %s (server-ready-timeout); last log lines:\n%s", cfg.ReadyURL, cfg.Timeout, s.tail.String())
	}
	return err
}

// WaitReady waits for a server that something else started (a URL, a
// service container still loading its weights): it polls urls in turn
// until one answers 2xx, and returns it, or fails after timeout.
func WaitReady(ctx context.Context, urls []string, timeout time.Duration) (string, error) {
	u, err := poll(ctx, urls, timeout, nil)
	if errors.Is(err, errNotReady) {
		return "", fmt.Errorf("server not ready after %s (server-ready-timeout): none of %s answered 2xx", timeout, strings.Join(urls, ", "))
	}
	return u, err
}

var (
	errGone     = errors.New("the server exited")
	errNotReady = errors.New("not ready")
)

// poll asks urls, backing off to every 2 s, until one answers 2xx (it
// returns that one), gone closes, ctx ends or timeout passes. The first
// that answers anything but 404 decides: a 503 from /health while the
// weights load is waited out even where /v1/models already answers; a URL
// that answers 404 (no such endpoint) is passed over from then on.
func poll(ctx context.Context, urls []string, timeout time.Duration, gone <-chan struct{}) (string, error) {
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: 2 * time.Second}
	wait := 100 * time.Millisecond
	absent := map[string]bool{}
	for {
		for _, u := range urls {
			if absent[u] && len(absent) < len(urls) {
				continue
			}
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
			if err != nil {
				return "", fmt.Errorf("server-ready-url %q: %w", u, err)
			}
			resp, err := client.Do(req)
			if err != nil {
				break // not listening yet
			}
			io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
			resp.Body.Close()
			if resp.StatusCode/100 == 2 {
				return u, nil
			}
			if resp.StatusCode != http.StatusNotFound {
				break
			}
			absent[u] = true
		}
		select {
		case <-gone:
			return "", errGone
		case <-ctx.Done():
			return "", fmt.Errorf("interrupted while waiting for the server: %w", ctx.Err())
		case <-time.After(wait):
		}
		if time.Now().After(deadline) {
			return "", errNotReady
		}
		wait = min(wait*2, 2*time.Second)
	}
}

// PID is the server's process id (and process group id).
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Stop terminates the whole process group: SIGTERM, then SIGKILL after 5 s.
// It is safe to call more than once.
func (s *Server) Stop() {
	s.once.Do(func() {
		pgid := s.cmd.Process.Pid
		_ = proc.Signal(pgid, syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(5 * time.Second):
		}
		// Whatever the leader did, children may linger: the group goes.
		_ = proc.Signal(pgid, syscall.SIGKILL)
		<-s.exited
	})
}

// LastLines is the tail of the server's log.
func (s *Server) LastLines() string { return s.tail.String() }

func exitText(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ee.Exited() {
			return fmt.Sprintf("exit code %d", ee.ExitCode())
		}
		return ee.String()
	}
	if err == nil {
		return "exit code 0"
	}
	return err.Error()
}

// tail keeps the last max lines written to it.
type tail struct {
	mu    sync.Mutex
	max   int
	lines []string
	part  []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.part = append(t.part, p...)
	for {
		i := bytes.IndexByte(t.part, '\n')
		if i < 0 {
			break
		}
		t.lines = append(t.lines, string(t.part[:i]))
		t.part = t.part[i+1:]
		if len(t.lines) > t.max {
			t.lines = t.lines[len(t.lines)-t.max:]
		}
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := append([]string{}, t.lines...)
	if len(t.part) > 0 {
		lines = append(lines, string(t.part))
	}
	if len(lines) == 0 {
		return "  (no output)"
	}
	return "  " + strings.Join(lines, "\n  ")
}

// SplitWords splits a command line like a POSIX shell would split words,
// with single and double quotes and backslash escapes, but without
// expansions, pipes or redirections: nothing is interpreted.
func SplitWords(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unterminated single quote")
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte(`"\$`+"`", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, errors.New("unterminated double quote")
			}
			inWord = true
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out, nil
}

// WithoutSecrets is env without what a model server has no use for and
// must not see: the action's inputs (INPUT_*, the GitHub token among them)
// and the runner's tokens. The server may be a pull request's own build.
// A variable the server does need goes in the config's env, which is
// added after.
func WithoutSecrets(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "INPUT_"), name == "GITHUB_TOKEN", name == "GH_TOKEN",
			strings.HasPrefix(name, "ACTIONS_RUNTIME_"), strings.HasPrefix(name, "ACTIONS_ID_TOKEN_"), name == "ACTIONS_CACHE_URL", name == "ACTIONS_RESULTS_URL":
			continue
		}
		out = append(out, kv)
	}
	return out
}
