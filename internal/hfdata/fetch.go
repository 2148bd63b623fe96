package hfdata

import (
	"bufio"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
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
	// Skipped counts the rows left out, by why (no prompt, a clip over
	// MaxSpeechSeconds, audio neither FLAC nor WAV).
	Skipped map[string]int
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
	if spec.Direct {
		return fetchSpecBench(ctx, c.Offline)
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
			line, skip, err := spec.line(row, fmt.Sprintf("%s-%d", name, out.Rows))
			if err != nil {
				return fmt.Errorf("%s row %d: %v", f, n, err)
			}
			if line == nil { // skipped, as AIPerf's loaders skip it
				if out.Skipped == nil {
					out.Skipped = map[string]int{}
				}
				out.Skipped[skip]++
				return nil
			}
			out.Rows++
			return enc.Encode(line)
		})
		if err != nil {
			return Fetched{}, fmt.Errorf("%s: %v", name, err)
		}
	}
	if out.Rows == 0 {
		col := cmp.Or(spec.Audio, spec.Conversation, spec.Template, spec.Prompt)
		return Fetched{}, fmt.Errorf("%s: no row of %s has a prompt in %q (skipped: %s)", name, strings.Join(files, ", "), col, out.SkippedText())
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

// SkippedText is Skipped as "N why, …", or "none".
func (f Fetched) SkippedText() string {
	var parts []string
	for _, why := range slices.Sorted(maps.Keys(f.Skipped)) {
		parts = append(parts, fmt.Sprintf("%d %s", f.Skipped[why], why))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// line is a row's JSONL line, or nil and why the row is left out.
func (p Public) line(row map[string]any, session string) (any, string, error) {
	const noPrompt = "with no prompt"
	if p.Audio != "" {
		clip, secs, err := speechOf(row[p.Audio])
		switch {
		case errors.Is(err, errNotAudio):
			return nil, "with audio neither FLAC nor WAV", nil
		case err != nil:
			return nil, "", fmt.Errorf("column %q: %v", p.Audio, err)
		case secs > MaxSpeechSeconds:
			return nil, fmt.Sprintf("with clips over %d s", MaxSpeechSeconds), nil
		case clip == "":
			return nil, "with no audio", nil
		}
		return map[string]any{"text": ASRPrompt, "audio": clip}, "", nil
	}
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
			return nil, noPrompt, nil
		}
		return map[string]any{"session_id": session, "turns": turns}, "", nil
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
	if p.Choices != "" {
		if c, ok := row[p.Choices].(map[string]any); ok {
			var opts []string
			for _, k := range slices.Sorted(maps.Keys(c)) {
				if v := text(c[k]); v != "" {
					opts = append(opts, k+"."+v)
				}
			}
			if len(opts) > 0 {
				prompt = strings.TrimSpace(prompt + " " + strings.Join(opts, " "))
			}
		}
	}
	if strings.TrimSpace(prompt) == "" {
		return nil, noPrompt, nil
	}
	line := map[string]any{"text": prompt}
	if p.Image != "" {
		img, err := imageOf(row[p.Image])
		if err != nil {
			return nil, "", fmt.Errorf("column %q: %v", p.Image, err)
		}
		if img != "" {
			line["image"] = img
		}
	}
	if p.Video != "" {
		switch v := row[p.Video].(type) {
		case string:
			if v != "" {
				line["video"] = v
			}
		case nil:
		default:
			return nil, "", fmt.Errorf("column %q: want a video's URL, not %T", p.Video, v)
		}
	}
	return line, "", nil
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
