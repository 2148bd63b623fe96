package dataset

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/aiperf-action/aiperf-action/internal/tokenizer"
)

// A Pool is one file of a random_pool folder: its lines, and the name a
// line's plain text takes among a request's named texts (the file's stem,
// as AIPerf names it: queries.jsonl's texts are "queries").
type Pool struct {
	*Index
	Name string
}

// indexPools reads a random_pool folder: each regular file in it (in
// name order) a pool, indexed as indexFile indexes a file. A request
// takes one line from every pool and sends them as one (AIPerf's
// random_pool folder). The digest covers every file.
func indexPools(dir string, tok *tokenizer.Tokenizer, words uint64) ([]Pool, string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, "", fmt.Errorf("--input-file: %w", err)
	}
	var pools []Pool
	sum := sha256.New()
	for k, e := range ents {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		// Each pool's synthesized lines (input_length) from its own source.
		x, err := indexFile(path, tok, words^uint64(k+1)*0x9e3779b97f4a7c15, Blocks{})
		if err != nil {
			return nil, "", err
		}
		fmt.Fprintf(sum, "%s\x00%s\x00", e.Name(), x.Digest)
		pools = append(pools, Pool{Index: x, Name: strings.TrimSuffix(e.Name(), filepath.Ext(e.Name()))})
	}
	if len(pools) == 0 {
		return nil, "", fmt.Errorf("--input-file %s: a random_pool folder with no files", dir)
	}
	return pools, hex.EncodeToString(sum.Sum(nil)), nil
}

// ReadNamed is line j, its plain text named after the pool when it has
// no names of its own.
func (p Pool) ReadNamed(j int, f io.ReaderAt) (LineData, error) {
	d, err := p.Read(j, f)
	if err == nil && d.Named == nil && d.Text != "" {
		d.Named = []NamedText{{Name: p.Name, Contents: []string{d.Text}}}
	}
	return d, err
}

// Queries reports whether the pool's lines give a rankings query: named
// ones, or plain ones in a pool named "query" or "queries".
func (p Pool) Queries() bool {
	if p.Name == "query" || p.Name == "queries" {
		return true
	}
	for _, m := range p.Lines {
		if !m.Query {
			return false
		}
	}
	return true
}
