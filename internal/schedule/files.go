package schedule

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"strings"

	"github.com/aiperf-action/aiperf-action/internal/config"
	"github.com/aiperf-action/aiperf-action/internal/dataset"
	"github.com/aiperf-action/aiperf-action/internal/endpoint"
	"github.com/aiperf-action/aiperf-action/internal/seeds"
)

// fileLines is the source of an input file's lines, each one request,
// read back from the file as its request is built: in file order, each
// pass shuffled, drawn at random, or a fixed schedule's lines.
type fileLines struct {
	g     *gen
	f     *os.File // the input file, open while its lines are read back
	perm  []int    // shuffle: this pass's order of the file's lines
	epoch int
}

func (s *fileLines) prompt(i int, _ at, keep bool) (prompt, error) {
	g, b := s.g, s.g.b
	var pr prompt
	j := s.order(i)
	if g.lines != nil {
		j = g.lines[i]
	}
	m := g.index.Lines[j]
	pr.ISL, pr.MaxTokens = int(m.ISL), int(m.MaxTokens)
	if mx := b.p.SynthesisMaxOSL; mx > 0 && pr.MaxTokens > mx {
		pr.MaxTokens = mx // --synthesis-max-osl
	}
	if !keep {
		return pr, nil
	}
	f, err := openOnce(&s.f, g.index.Path)
	if err != nil {
		return pr, err
	}
	d, err := g.index.Read(j, f)
	if err != nil {
		return pr, err
	}
	pr.Text, pr.Extra, pr.images, pr.videos, pr.audios = d.Text, d.Extra, d.Images, d.Videos, clips(nil, d.Audios)
	if b.rankings {
		var ok bool
		if pr.query, pr.passages, ok = dataset.Query(d.Named); !ok {
			return pr, fmt.Errorf("%s line %d: --endpoint-type %s needs a query: \"texts\": [{\"name\": \"query\", \"contents\": [...]}, {\"name\": \"passages\", \"contents\": [...]}]", g.index.Path, j+1, b.p.EndpointType)
		}
	}
	return pr, nil
}

func (s *fileLines) close() { closeOnce(&s.f) }

// order is which of a file's prompts entry i sends: in file order
// (sequential, the default), each pass over the file in its own seeded
// order (shuffle), or drawn with replacement (random).
func (s *fileLines) order(i int) int {
	g := s.g
	n := len(g.index.Lines)
	switch g.sampling {
	case config.SamplingRandom:
		return seeds.Draw(g.samplingRoot, uint64(i)).IntN(n)
	case config.SamplingShuffle:
		if epoch := i / n; s.perm == nil || s.epoch != epoch {
			s.perm, s.epoch = seeds.Draw(g.samplingRoot, uint64(epoch)).Perm(n), epoch
		}
		return s.perm[i%n]
	}
	return i % n
}

// pools is the source of a random_pool folder's requests: one line of
// each pool, drawn with replacement (AIPerf's random_pool folder), sent
// as one request: texts joined, named texts together.
type pools struct {
	g  *gen
	fs []*os.File // each pool's file, open while its lines are read back
}

func (s *pools) prompt(i int, _ at, keep bool) (prompt, error) {
	g, b := s.g, s.g.b
	var pr prompt
	var texts []string
	var named []dataset.NamedText
	for k, pool := range g.pools {
		j := seeds.Draw(seeds.Pool(g.samplingRoot, k), uint64(i)).IntN(len(pool.Lines))
		m := pool.Lines[j]
		pr.ISL += int(m.ISL)
		pr.MaxTokens = max(pr.MaxTokens, int(m.MaxTokens))
		if !keep {
			continue
		}
		if s.fs == nil {
			s.fs = make([]*os.File, len(g.pools))
		}
		f, err := openOnce(&s.fs[k], pool.Path)
		if err != nil {
			return pr, err
		}
		d, err := pool.ReadNamed(j, f)
		if err != nil {
			return pr, err
		}
		texts, named = append(texts, d.Text), append(named, d.Named...)
		pr.images, pr.videos, pr.audios = append(pr.images, d.Images...), append(pr.videos, d.Videos...), clips(pr.audios, d.Audios)
		if len(d.Extra) > 0 {
			if pr.Extra == nil {
				pr.Extra = map[string]json.RawMessage{}
			}
			maps.Copy(pr.Extra, d.Extra)
		}
	}
	pr.Text = strings.Join(texts, "\n")
	if b.rankings && keep {
		var ok bool
		if pr.query, pr.passages, ok = dataset.Query(named); !ok {
			return pr, fmt.Errorf("%s: request %d drew no query from the folder's pools", b.p.InputFile, i)
		}
	}
	return pr, nil
}

func (s *pools) close() {
	for k := range s.fs {
		closeOnce(&s.fs[k])
	}
}

// clips appends a file's audio to a request's clips.
func clips(to []endpoint.AudioClip, from []dataset.Audio) []endpoint.AudioClip {
	for _, a := range from {
		to = append(to, endpoint.AudioClip{Data: a.Data, Format: a.Format})
	}
	return to
}

// openOnce opens path into *f unless it is open.
func openOnce(f **os.File, path string) (*os.File, error) {
	if *f == nil {
		o, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("--input-file: %w", err)
		}
		*f = o
	}
	return *f, nil
}

// closeOnce closes *f if it is open.
func closeOnce(f **os.File) {
	if *f != nil {
		(*f).Close()
		*f = nil
	}
}
