package tokenizer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/hub"
)

// Resolve finds the tokenizer.json spec names: spec itself when it is a
// file, spec/tokenizer.json when it is a folder, or, for a model id
// (ORG/NAME), its tokenizer.json at revision (default main) in the
// Hugging Face hub cache, downloaded from the hub (HF_ENDPOINT, HF_TOKEN)
// on first use into the layout huggingface_hub shares. A revision the
// cache holds serves with no request; HF_HUB_OFFLINE=1 makes a miss an
// error instead of a download.
func Resolve(spec, revision string) (string, error) {
	if st, err := os.Stat(spec); err == nil {
		if !st.IsDir() {
			return spec, nil
		}
		p := filepath.Join(spec, "tokenizer.json")
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("--tokenizer %s: the folder has no tokenizer.json (only byte-level BPE tokenizer.json files are read; a SentencePiece tokenizer.model is not)", spec)
		}
		return p, nil
	}
	if !hub.IsRepoID(spec) || strings.HasPrefix(spec, ".") {
		return "", fmt.Errorf("--tokenizer %s: no such file, and not a Hugging Face model id (ORG/NAME)", spec)
	}
	c := hub.FromEnv()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	p, err := c.File(ctx, hub.Model, spec, revision, "tokenizer.json")
	if err != nil {
		hint := "give --tokenizer PATH to a tokenizer.json or a folder holding one"
		if hub.NotFound(err) {
			hint = "only byte-level BPE tokenizer.json files are read (a SentencePiece tokenizer.model is not); " + hint
		}
		if snaps, _ := filepath.Glob(filepath.Join(hub.Folder(c.CacheDir, hub.Model, spec), "snapshots", "*")); len(snaps) > 0 {
			hint += "; the cache holds snapshots " + names(snaps) + " (--tokenizer-revision)"
		}
		return "", fmt.Errorf("--tokenizer %s: %v; %s", spec, err, hint)
	}
	return p, nil
}

func names(paths []string) string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = filepath.Base(p)
	}
	return strings.Join(out, ", ")
}
