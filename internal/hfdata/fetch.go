package hfdata

import (
	"bufio"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/aiperf-action/aiperf-action/internal/hub"
)

// Fetched is a public dataset turned into this tool's JSONL: one request
// a line ({"text", "image"}, AIPerf's single_turn) or, for a dataset of
// turns, one conversation a line (multi_turn).
type Fetched struct {
	Path      string
	MultiTurn bool
	Rows      int // prompts written
	Repo      string
	Commit    string
	Files     []string // the data files read, in the repository
}

// CacheDir is where fetched datasets' JSONL is kept, by commit:
// AIPERF_CACHE, else the user's cache folder, under aiperf-action/public.
func CacheDir() string {
	if d := os.Getenv("AIPERF_CACHE"); d != "" {
		return filepath.Join(d, "public")
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "aiperf-action", "public")
	}
	return filepath.Join(os.TempDir(), "aiperf-action-public")
}

// Fetch downloads the public dataset name's data files for its split
// (subset overrides the catalog's, AIPerf's --hf-subset) into the hub
// cache and writes its prompts as JSONL under CacheDir, once a commit.
func Fetch(ctx context.Context, c hub.Config, name, subset string) (Fetched, error) {
	spec, err := Lookup(name)
	if err != nil {
		return Fetched{}, err
	}
	if subset != "" {
		spec.Subset = subset
	}
	l, err := c.List(ctx, hub.Dataset, spec.Repo, "main")
	if err != nil {
		return Fetched{}, err
	}
	var readme []byte
	if slices.Contains(l.Files, "README.md") {
		if p, err := c.File(ctx, hub.Dataset, spec.Repo, l.Commit, "README.md"); err == nil {
			readme, _ = os.ReadFile(p)
		} else if !c.Offline {
			return Fetched{}, err
		}
	}
	files, err := DataFiles(l.Files, readme, spec.Subset, spec.Split)
	if err != nil {
		return Fetched{}, fmt.Errorf("%s (%s at %.12s): %v", name, spec.Repo, l.Commit, err)
	}
	key := l.Commit
	if spec.Subset != "" {
		key += "-" + spec.Subset
	}
	out := Fetched{Repo: spec.Repo, Commit: l.Commit, Files: files, MultiTurn: spec.Turns,
		Path: filepath.Join(CacheDir(), name, key+"-"+spec.Split+".jsonl")}
	if st, err := os.Stat(out.Path); err == nil && st.Size() > 0 {
		out.Rows = -1 // (kept from before; counted when read)
		return out, nil
	}
	if err := os.MkdirAll(filepath.Dir(out.Path), 0o755); err != nil {
		return Fetched{}, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(out.Path), ".fetch-*")
	if err != nil {
		return Fetched{}, err
	}
	defer os.Remove(tmp.Name())
	w := bufio.NewWriter(tmp)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, f := range files {
		local, err := c.File(ctx, hub.Dataset, spec.Repo, l.Commit, f)
		if err != nil {
			return Fetched{}, err
		}
		n := 0
		err = Rows(local, func(row map[string]any) error {
			n++
			line, ok, err := spec.line(row, fmt.Sprintf("%s-%d", name, out.Rows))
			if err != nil {
				return fmt.Errorf("%s row %d: %v", f, n, err)
			}
			if !ok {
				return nil // no prompt: skipped, as AIPerf's loaders skip it
			}
			out.Rows++
			return enc.Encode(line)
		})
		if err != nil {
			return Fetched{}, fmt.Errorf("%s: %v", name, err)
		}
	}
	if out.Rows == 0 {
		col := cmp.Or(spec.Conversation, spec.Template, spec.Prompt)
		return Fetched{}, fmt.Errorf("%s: no row of %s has a prompt in %q", name, strings.Join(files, ", "), col)
	}
	if err := w.Flush(); err != nil {
		return Fetched{}, err
	}
	if err := tmp.Close(); err != nil {
		return Fetched{}, err
	}
	return out, os.Rename(tmp.Name(), out.Path)
}

var templateField = regexp.MustCompile(`\{([A-Za-z0-9_]+)\}`)

// line is a row's JSONL line, and false when it has no prompt.
func (p Public) line(row map[string]any, session string) (any, bool, error) {
	text := func(v any) string {
		switch x := v.(type) {
		case string:
			return x
		case nil:
			return ""
		}
		return fmt.Sprint(v)
	}
	if p.Turns {
		var turns []map[string]string
		switch x := row[p.Prompt].(type) {
		case []any:
			for _, t := range x {
				if s := strings.TrimSpace(text(t)); s != "" {
					turns = append(turns, map[string]string{"text": text(t)})
				}
			}
		case string:
			if strings.TrimSpace(x) != "" {
				turns = append(turns, map[string]string{"text": x})
			}
		}
		if len(turns) == 0 {
			return nil, false, nil
		}
		return map[string]any{"session_id": session, "turns": turns}, true, nil
	}
	var prompt string
	if p.Conversation != "" {
		prompt = firstUserMessage(row[p.Conversation], p.ContentKey)
	} else if p.Template != "" {
		prompt = templateField.ReplaceAllStringFunc(p.Template, func(m string) string { return text(row[m[1:len(m)-1]]) })
		if strings.TrimSpace(templateField.ReplaceAllString(p.Template, "")) == strings.TrimSpace(prompt) {
			prompt = "" // every column empty
		}
	} else {
		prompt = text(row[p.Prompt])
	}
	if strings.TrimSpace(prompt) == "" {
		return nil, false, nil
	}
	line := map[string]any{"text": prompt}
	if p.Image != "" {
		img, err := imageOf(row[p.Image])
		if err != nil {
			return nil, false, fmt.Errorf("column %q: %v", p.Image, err)
		}
		if img != "" {
			line["image"] = img
		}
	}
	return line, true, nil
}

// firstUserMessage is the text of a conversation's first user (or
// human) message, or of its first message when none says its role, as
// AIPerf's hf_conversation reads it: a message wrapped in a list of its
// own (VisionArena's) is unwrapped, and "<image>" placeholders (LLaVA's)
// are taken out.
func firstUserMessage(v any, key string) string {
	msgs, _ := v.([]any)
	var norm []map[string]any
	for _, item := range msgs {
		if l, ok := item.([]any); ok && len(l) > 0 {
			item = l[0]
		}
		if m, ok := item.(map[string]any); ok && len(m) > 0 {
			norm = append(norm, m)
		}
	}
	text := func(m map[string]any) string {
		s, _ := m[key].(string)
		return strings.TrimSpace(strings.ReplaceAll(s, "<image>", ""))
	}
	for _, m := range norm {
		role, _ := m["role"].(string)
		if role == "" {
			role, _ = m["from"].(string)
		}
		if r := strings.ToLower(role); r == "user" || r == "human" {
			return text(m)
		}
	}
	if len(norm) > 0 {
		return text(norm[0])
	}
	return ""
}

// imageOf is an image cell as a URL: the hub's {bytes, path} as a data
// URL of its sniffed type (the first of a list of them), or a URL as it
// is.
func imageOf(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "", nil
	case string:
		return x, nil
	case []any:
		for _, item := range x {
			if s, err := imageOf(item); err != nil || s != "" {
				return s, err
			}
		}
		return "", nil
	case map[string]any:
		var b []byte
		switch y := x["bytes"].(type) {
		case string:
			b = []byte(y)
		case []byte:
			b = y
		}
		if len(b) == 0 {
			if p, _ := x["path"].(string); p != "" {
				return "", fmt.Errorf("an image by path only (%q), whose bytes are not in the dataset", p)
			}
			return "", nil
		}
		mt := http.DetectContentType(b)
		if !strings.HasPrefix(mt, "image/") {
			return "", fmt.Errorf("its bytes are not an image (%s)", mt)
		}
		return "data:" + mt + ";base64," + base64.StdEncoding.EncodeToString(b), nil
	}
	return "", fmt.Errorf("not an image: %T", v)
}
