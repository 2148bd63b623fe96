package report

import (
	"strings"
	"testing"
)

// Server and artifact text cannot format, inject HTML, mention anyone or
// become a link in a PR comment.
func TestEscapeMarkdownIsInert(t *testing.T) {
	in := "@octocat see https://evil.example/x, WWW.evil.example and <img src=x onerror=y> **bold** [a](b) #12\nnext"
	out := EscapeMarkdown(in)
	for _, bad := range []string{"@octocat", "https://", "WWW.", "<img", "**", "[a](b)", "\n"} {
		if strings.Contains(out, bad) {
			t.Errorf("%q survives in %q", bad, out)
		}
	}
	for _, keep := range []string{"@\u200boctocat", "https:\u200b//evil.example/x", "WWW\u200b.evil.example", "&lt;img"} {
		if !strings.Contains(out, keep) {
			t.Errorf("want %q in %q", keep, out)
		}
	}
	if got := EscapeMarkdown("sha256:abc 20.19 ms"); got != "sha256:abc 20.19 ms" {
		t.Errorf("plain text changed: %q", got)
	}
}
