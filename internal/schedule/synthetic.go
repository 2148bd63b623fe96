package schedule

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/aiperf-action/aiperf-action/internal/config"
	"github.com/aiperf-action/aiperf-action/internal/dataset"
	"github.com/aiperf-action/aiperf-action/internal/endpoint"
	"github.com/aiperf-action/aiperf-action/internal/seeds"
)

// synthetic is the source of generated prompts: each of a length from the
// length stream (or the mixture), its words from the repeat's payload
// stream, with its images and audio, a prefix from the pool, the shared
// system prompt, and a session's own context before its first turn.
type synthetic struct {
	g      *gen
	stream *dataset.Stream
}

func (s *synthetic) prompt(i int, pos at, keep bool) (prompt, error) {
	g, p := s.g, s.g.b.p
	var pr prompt
	var err error
	pr.Prompt = s.stream.Next(keep)
	pr.own = pr.Text
	for range p.PromptBatchSize - 1 {
		// More inputs of the request (an embeddings list), each its own
		// draw from the stream, their tokens counted with the first's.
		q := s.stream.Next(keep)
		pr.ISL += q.ISL
		if keep {
			pr.batch = append(pr.batch, q.Text)
		}
	}
	if p.Images() {
		if pr.images, err = g.imagesOf(i, keep); err != nil {
			return pr, err
		}
	}
	if p.Audio() {
		if pr.audios, err = g.audioOf(i, keep); err != nil {
			return pr, err
		}
	}
	if p.Video() && keep {
		pr.videos = g.b.videosOf(i)
	}
	if len(g.prefixes) > 0 {
		pre := g.prefixes[seeds.Draw(g.prefixPicks, uint64(i)).IntN(len(g.prefixes))]
		pr.ISL += p.PrefixPromptLength
		if keep {
			pr.Text = pre + " " + pr.Text
		}
	}
	if g.system != "" {
		pr.ISL += p.SharedSystemPromptLength
		pr.SystemISL = p.SharedSystemPromptLength
	}
	if n := p.UserContextPromptLength; n > 0 && g.turns != nil && pos.turn == 0 {
		// The session's own context, before its first turn (and so in
		// its history): words from the session's own source.
		pr.ISL += n
		if keep {
			pr.Text = g.userContext(n, pos.sess) + " " + pr.Text
		}
	}
	return pr, nil
}

func (*synthetic) close() {}

// rankingsSource is the source of synthetic rankings requests: a query
// and passages each.
type rankingsSource struct{ g *gen }

func (s rankingsSource) prompt(i int, _ at, keep bool) (prompt, error) {
	var pr prompt
	pr.ISL, pr.query, pr.passages = s.g.rankingsRequest(i, keep)
	return pr, nil
}

func (rankingsSource) close() {}

// rankingsRequest is synthetic rankings request i: a query and passages
// of the --rankings-* lengths (normal, rounded, at least 1), words and
// lengths from the request's own source; n is their tokens together.
func (g *gen) rankingsRequest(i int, keep bool) (n int, query string, passages []string) {
	p := g.b.p
	r := rand.New(seeds.Source(g.lengthsRoot, seeds.StreamRankings, uint64(i))) // (lengths shared by repeats, words not)
	draw := func(mean, sd int) int {
		if sd <= 0 {
			return mean
		}
		return max(1, int(math.Round(float64(mean)+float64(sd)*r.NormFloat64())))
	}
	k := draw(p.RankingsPassagesMean, p.RankingsPassagesStddev)
	q := draw(p.RankingsQueryTokensMean, p.RankingsQueryTokensStddev)
	lens := make([]int, k)
	n = q
	for j := range lens {
		lens[j] = draw(p.RankingsPassageTokensMean, p.RankingsPassageTokensStddev)
		n += lens[j]
	}
	if !keep {
		return n, "", nil
	}
	v := g.b.tok.Words()
	r = rand.New(seeds.Source(g.wordsRoot, seeds.StreamRankings, uint64(i)))
	query = v.Text(q, r)
	for _, l := range lens {
		passages = append(passages, v.Text(l, r))
	}
	return n, query, passages
}

// userContext is session s's own context of n tokens
// (--user-context-prompt-length), from its own source.
func (g *gen) userContext(n, s int) string {
	return g.b.tok.Words().Text(n, rand.New(seeds.Source(g.wordsRoot, seeds.StreamUserContexts, uint64(s))))
}

// imagesOf is synthetic request i's images (--image-*): their sizes from
// the request's own source (shared by repeats), their pixels from the
// repeat's (each repeat its own images).
func (g *gen) imagesOf(i int, keep bool) ([]string, error) {
	p := g.b.p
	r := rand.New(seeds.Source(g.lengthsRoot, seeds.StreamImages, uint64(i)))
	px := rand.New(seeds.Source(g.wordsRoot, seeds.StreamImages, uint64(i)))
	side := func(mean, sd float64) int {
		return max(1, int(math.Round(mean+sd*r.NormFloat64())))
	}
	var out []string
	for range p.ImageBatchSize {
		w, h := side(p.ImageWidthMean, p.ImageWidthStddev), side(p.ImageHeightMean, p.ImageHeightStddev)
		format := p.ImageFormat
		if format == "random" {
			format = [2]string{"png", "jpeg"}[r.IntN(2)]
		}
		if !keep {
			continue
		}
		u, err := dataset.SyntheticImage(w, h, format, px)
		if err != nil {
			return nil, fmt.Errorf("synthetic image %d of request %d: %w", len(out)+1, i, err)
		}
		out = append(out, u)
	}
	return out, nil
}

// audioOf is synthetic request i's audio clips (--audio-*): lengths,
// rates and depths from the request's own source (shared by repeats),
// samples from the repeat's.
func (g *gen) audioOf(i int, keep bool) ([]endpoint.AudioClip, error) {
	p := g.b.p
	r := rand.New(seeds.Source(g.lengthsRoot, seeds.StreamAudio, uint64(i)))
	smp := rand.New(seeds.Source(g.wordsRoot, seeds.StreamAudio, uint64(i)))
	var out []endpoint.AudioClip
	for range p.AudioBatchSize {
		secs := max(0.1, p.AudioLengthMean+p.AudioLengthStddev*r.NormFloat64())
		rate := int(math.Round(p.AudioSampleRates[r.IntN(len(p.AudioSampleRates))] * 1000))
		depth := p.AudioDepths[r.IntN(len(p.AudioDepths))]
		if !keep {
			continue
		}
		a, err := dataset.SyntheticWAV(min(secs, dataset.MaxAudioSeconds), rate, depth, p.AudioChannels, smp)
		if err != nil {
			return nil, fmt.Errorf("request %d: %w", i, err)
		}
		out = append(out, endpoint.AudioClip{Data: a.Data, Format: a.Format})
	}
	return out, nil
}

// drawOSL draws an output length from --osl and its stddev.
func drawOSL(p *config.Profile, r *rand.Rand) int {
	if p.OSLStddev <= 0 {
		return p.OSLMean
	}
	return max(1, int(math.Round(float64(p.OSLMean)+p.OSLStddev*r.NormFloat64())))
}

// shapes sets up the prefix shapes of synthetic prompts: a pool of
// --num-prefix-prompts prefixes and a shared system prompt, their words
// from the repeat's own root (each repeat its own, none served from
// another's cache; within a run they are shared, as they are meant to be).
func (g *gen) shapes(p *config.Profile, seed uint64) {
	words := func(n int, index uint64) string {
		return g.b.tok.Words().Text(n, rand.New(seeds.Source(g.wordsRoot, seeds.StreamPrefixes, index)))
	}
	for k := 0; k < p.NumPrefixPrompts; k++ {
		g.prefixes = append(g.prefixes, words(p.PrefixPromptLength, uint64(k)))
	}
	g.prefixPicks = seeds.Root(seed, seeds.StreamPrefixPicks)
	if p.SharedSystemPromptLength > 0 {
		g.system = words(p.SharedSystemPromptLength, math.MaxUint64)
	}
}

// videosOf is synthetic request i's clips (--video-*): the next
// --video-batch-size of the pool, in turn (the pool is made before the
// load: encoding is no work for a worker's hot path).
func (b *builder) videosOf(i int) []string {
	n := len(b.videos)
	if n == 0 {
		return nil
	}
	out := make([]string, b.p.VideoBatchSize)
	for j := range out {
		out[j] = b.videos[(i*b.p.VideoBatchSize+j)%n]
	}
	return out
}

// videoPool encodes the plan's clips, one a dataset entry (at most
// --num-dataset-entries, and no more than the requests need), each from
// its own seed under the repeat's payload seed.
func (b *builder) videoPool(seed uint64, requests int) error {
	p := b.p
	n := min(max(p.NumDatasetEntries, 1), max(requests*p.VideoBatchSize, 1))
	root := seeds.Root(b.wordsRoot(seed), seeds.StreamVideo)
	b.videos = make([]string, n)
	for k := range n {
		u, err := dataset.SyntheticVideo(p.VideoSpec(), root, k)
		if err != nil {
			return fmt.Errorf("synthetic video %d of %d: %w", k+1, n, err)
		}
		b.videos[k] = u
	}
	return nil
}
