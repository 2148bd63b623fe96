package tokenizer

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// repoID is a Hugging Face model id: NAME or ORG/NAME.
var repoID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$`)

// Resolve finds the tokenizer.json spec names: spec itself when it is a
// file, spec/tokenizer.json when it is a folder, or, for a model id
// (ORG/NAME), the snapshot of revision (default main) in the local Hugging
// Face cache, which a machine that has served the model already holds.
// Nothing is downloaded: when it is not there, the error says where it
// looked and how to point at a file instead.
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
	if !repoID.MatchString(spec) || strings.HasPrefix(spec, ".") {
		return "", fmt.Errorf("--tokenizer %s: no such file, and not a Hugging Face model id (ORG/NAME)", spec)
	}
	if revision == "" {
		revision = "main"
	}
	dirs := CacheDirs()
	repo := "models--" + strings.ReplaceAll(spec, "/", "--")
	var looked []string
	for _, d := range dirs {
		root := filepath.Join(d, repo)
		looked = append(looked, root)
		if _, err := os.Stat(root); err != nil {
			continue
		}
		commit := revision
		if b, err := os.ReadFile(filepath.Join(root, "refs", revision)); err == nil {
			commit = strings.TrimSpace(string(b))
		}
		snap := filepath.Join(root, "snapshots", commit)
		if _, err := os.Stat(snap); err != nil {
			snaps, _ := filepath.Glob(filepath.Join(root, "snapshots", "*"))
			return "", fmt.Errorf("--tokenizer %s: %s has no snapshot for revision %q (it has: %s); give --tokenizer-revision, or --tokenizer PATH to a tokenizer.json",
				spec, root, revision, names(snaps))
		}
		p := filepath.Join(snap, "tokenizer.json")
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("--tokenizer %s: snapshot %s has no tokenizer.json (only byte-level BPE tokenizer.json files are read); fetch it into the cache where the network allows (huggingface-cli download %s tokenizer.json), or give --tokenizer PATH",
				spec, snap, spec)
		}
		return p, nil
	}
	return "", fmt.Errorf("--tokenizer %s: not in the local Hugging Face cache (looked in %s); nothing is downloaded here: fetch it where the network allows (huggingface-cli download %s tokenizer.json), set HF_HUB_CACHE or HF_HOME to the cache that has it, or give --tokenizer PATH to a tokenizer.json",
		spec, strings.Join(looked, ", "), spec)
}

// CacheDirs are the Hugging Face hub caches, in the order the hub library
// takes them: HF_HUB_CACHE, then the older HUGGINGFACE_HUB_CACHE, then
// HF_HOME/hub, then XDG_CACHE_HOME/huggingface/hub, then
// ~/.cache/huggingface/hub. The first that is set wins, as it does there.
func CacheDirs() []string {
	if d := os.Getenv("HF_HUB_CACHE"); d != "" {
		return []string{d}
	}
	if d := os.Getenv("HUGGINGFACE_HUB_CACHE"); d != "" {
		return []string{d}
	}
	if d := os.Getenv("HF_HOME"); d != "" {
		return []string{filepath.Join(d, "hub")}
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return []string{filepath.Join(d, "huggingface", "hub")}
	}
	if home, err := os.UserHomeDir(); err == nil {
		return []string{filepath.Join(home, ".cache", "huggingface", "hub")}
	}
	return nil
}

func names(paths []string) string {
	if len(paths) == 0 {
		return "none"
	}
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = filepath.Base(p)
	}
	return strings.Join(out, ", ")
}
