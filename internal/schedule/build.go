package schedule

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/config"
	"github.com/aiperf-action/aiperf-action/internal/dataset"
	"github.com/aiperf-action/aiperf-action/internal/endpoint"
	"github.com/aiperf-action/aiperf-action/internal/seeds"
	"github.com/aiperf-action/aiperf-action/internal/tokenizer"
)

// builder carries what every phase's entries need.
type builder struct {
	p          *config.Profile
	kind       endpoint.Kind
	traits     endpoint.Traits
	extra      map[string]json.RawMessage
	mix        []dataset.Bucket // --sequence-distribution's
	tok        *tokenizer.Tokenizer
	rankings   bool     // a rankings endpoint: each request a query and passages
	imagesOnly bool     // an image_retrieval endpoint: each request its images, no text
	audioOnly  bool     // an audio_transcription endpoint: each request a clip, no text
	systemISL  int      // the tokens of --system-prompt (0: none)
	videos     []string // the synthetic clips (--video-*), as data URLs
	seed       uint64   // the plan's root seed (its profiling phase's)
}

// wordsRoot is the root of the words (prompts, prefixes, media) of the
// phase whose seed is seed: the repeat's (seeds.PayloadSeed), or, where
// the profile names its payload seed, that seed for the profiling phase
// and that seed's warmup stream for the warmup.
func (b *builder) wordsRoot(seed uint64) uint64 {
	p := b.p
	switch {
	case p.PayloadSeed == 0:
		return seeds.PayloadSeed(seed, p.Repeat)
	case seed == b.seed:
		return p.PayloadSeed
	default:
		return seeds.Root(p.PayloadSeed, seeds.StreamWarmup)
	}
}

// PayloadSeed is the root of the words of p's plan with seed, as run.json
// records it (payload_seed): the profile's own where it names one.
func PayloadSeed(p *config.Profile, seed uint64) uint64 {
	return (&builder{p: p, seed: seed}).wordsRoot(seed)
}

// Build makes the plan for p with seed. It decides every phase's shape and
// request count; the entries themselves are generated when they are asked
// for (Phase.Iter), the same way in the controller and in every worker, so
// a plan of a million requests is never held whole.
func Build(p *config.Profile, seed uint64) (*Plan, error) {
	extra, err := config.ParseExtraInputs(p.ExtraInputs)
	if err != nil {
		return nil, err
	}
	kind, err := endpoint.Make(p.EndpointType, p.RequestTemplate, p.PayloadTemplate, p.ResponseField)
	if err != nil {
		return nil, err
	}
	tok, err := tokenizer.Load(p.Tokenizer, p.TokenizerRevision)
	if err != nil {
		return nil, err
	}
	mix, err := config.ParseSeqDist(p.SeqDist)
	if err != nil {
		return nil, err
	}
	tr := endpoint.TraitsOf(kind)
	b := &builder{p: p, kind: kind, traits: tr, extra: extra, mix: mix, tok: tok, rankings: tr.Ranking, imagesOnly: tr.ImageRetrieval, audioOnly: tr.AudioTranscription, seed: seed}
	if p.SystemPrompt != "" {
		b.systemISL = tok.Count(p.SystemPrompt)
	}
	plan := &Plan{Seed: seed, Tokenizer: tok}
	if p.Video() {
		// The clips go in the bodies, so they are made before any phase's
		// first entry is: one a dataset entry, no more than the requests
		// need (a duration's pool cycles through the entries).
		requests := p.NumDatasetEntries
		if p.BenchmarkDuration == 0 || p.RequestCountSet {
			requests = p.RequestCount + p.WarmupRequestCount
		}
		if err := b.videoPool(seed, requests); err != nil {
			return nil, err
		}
	}
	if p.WarmupRequestCount > 0 || p.WarmupDuration > 0 || p.NumWarmupSessions > 0 {
		// Warmup draws from its own seed, so adding a warmup never changes
		// the profiling plan.
		plan.Phases = append(plan.Phases, *b.warmup(seeds.Root(seed, seeds.StreamWarmup)))
	}
	prof, digest, err := b.profiling(seed)
	if err != nil {
		return nil, err
	}
	plan.Phases = append(plan.Phases, *prof)
	plan.InputDigest = digest
	for i := range plan.Phases {
		// A request body that can't be built fails now, not in a worker.
		if it := plan.Phases[i].Iter(); !it.Next(true) && it.Err() != nil {
			return nil, it.Err()
		}
	}
	return plan, nil
}

// Ticks yields a rate-centric phase's ticks (ns from its start) that are
// this worker's, in order: tick k is worker offset's when k mod Σweights
// falls in its share (weights nil: one each of stride), so a machine
// twice the size takes twice the ticks. It ends at the duration, if any.
func (ph *Phase) Ticks(offset, stride int, weights []int) func() (int64, bool) {
	if ph.gen == nil || ph.gen.ticks == nil {
		return func() (int64, bool) { return 0, false }
	}
	d := *ph.gen.ticks
	if len(weights) == 0 {
		weights = make([]int, max(stride, 1))
		for i := range weights {
			weights[i] = 1
		}
	}
	lo, total := 0, 0
	for i, w := range weights {
		if i < offset {
			lo += w
		}
		total += w
	}
	hi := lo + weights[min(offset, len(weights)-1)]
	k := 0
	return func() (int64, bool) {
		for {
			t, ok := d.next()
			if !ok {
				return 0, false
			}
			r := k % total
			k++
			if r >= lo && r < hi {
				return seconds(t), true
			}
		}
	}
}

func seconds(s float64) int64 { return int64(math.Round(s * float64(time.Second))) }

func (b *builder) lengths() dataset.Lengths {
	p := b.p
	return dataset.Lengths{ISLMean: p.ISLMean, ISLStddev: p.ISLStddev, OSLMean: p.OSLMean, OSLStddev: p.OSLStddev, Mix: b.mix}
}

func (b *builder) warmup(seed uint64) *Phase {
	p := b.p
	ph := &Phase{Name: PhaseWarmup, Seed: seed, GraceNs: seconds(p.GracePeriod), DurationNs: seconds(p.WarmupDuration),
		Prefill: p.PrefillConcurrency, ConcRampNs: seconds(p.ConcurrencyRampDuration)}
	if p.WarmupGracePeriod != nil {
		ph.GraceNs = seconds(*p.WarmupGracePeriod)
	}
	if p.WarmupPrefillConcurrency > 0 {
		ph.Prefill = p.WarmupPrefillConcurrency
	}
	if p.WarmupConcurrencyRampDuration > 0 {
		ph.ConcRampNs = seconds(p.WarmupConcurrencyRampDuration)
	}
	ph.PrefillRamp = seconds(p.PrefillRampDuration)
	if p.WarmupPrefillRampDuration > 0 {
		ph.PrefillRamp = seconds(p.WarmupPrefillRampDuration)
	}
	rateRamp := p.RateRampDuration
	if p.WarmupRateRampDuration > 0 {
		rateRamp = p.WarmupRateRampDuration
	}
	pattern := p.WarmupArrivalPattern
	if pattern == "" {
		pattern = p.ArrivalPattern
	}
	rate := p.WarmupRequestRate
	if rate == 0 {
		rate = p.RequestRate
	}
	conc := p.WarmupConcurrency
	if conc == 0 {
		conc = p.Concurrency
	}
	ph.Ceiling = conc
	g := &gen{b: b, ids: seed, lengthsRoot: seed, wordsRoot: b.wordsRoot(seed), synthetic: true, modelRoot: seeds.Root(seed, seeds.StreamModels)}
	ph.gen = g
	if p.NumWarmupSessions > 0 {
		// Whole synthetic sessions, laid out as the profiling phase lays
		// out its own (closed, or each starting on the warmup's rate).
		q := *p
		q.ConversationNum, q.RequestCountSet, q.RequestCount, q.BenchmarkDuration = p.NumWarmupSessions, false, 0, p.WarmupDuration
		q.RequestRate, q.ArrivalPattern, q.RateRampDuration = rate, pattern, rateRamp
		q.InputFile, q.CustomDatasetType, q.PublicDataset, q.FixedSchedule, q.UserCentricRate = "", "", "", false, 0
		if err := g.layout(ph, &q, seed); err == nil {
			return ph
		}
		// (Validate refused what layout can't lay out.)
	}
	ph.Count = p.WarmupRequestCount
	if rate > 0 {
		ph.Open, ph.Rate = true, rate
		if p.WarmupConcurrency == 0 && !p.ConcurrencySet {
			ph.Ceiling = 0
		}
		arr, err := NewArrival(pattern, p.ArrivalSmoothness)
		if err != nil {
			arr = Poisson{} // (Validate refused a bad pattern)
		}
		g.arrivals = &dueSpec{a: arr, seed: seed, rate: rate, n: p.WarmupRequestCount, limit: p.WarmupDuration, ramp: rateRamp}
		ph.Count = g.arrivals.count()
	} else if ph.Count == 0 {
		ph.Cycle, ph.Count = true, p.NumDatasetEntries
	}
	return ph
}

func (b *builder) profiling(seed uint64) (*Phase, string, error) {
	p := b.p
	ph := &Phase{Name: PhaseProfiling, Seed: seed, Ceiling: p.Ceiling(), Prefill: p.PrefillConcurrency, PrefillRamp: seconds(p.PrefillRampDuration), ConcRampNs: seconds(p.ConcurrencyRampDuration),
		DurationNs: seconds(p.BenchmarkDuration), GraceNs: seconds(p.GracePeriod),
		CancelPct: p.CancellationRate, CancelDelay: seconds(p.CancellationDelay)}
	g := &gen{b: b, ids: seed, lengthsRoot: seed, wordsRoot: b.wordsRoot(seed), synthetic: p.InputFile == "", modelRoot: seeds.Root(seed, seeds.StreamModels)}
	g.shapes(p, seed)
	var digest string
	if p.InputFile != "" {
		var err error
		if digest, err = g.openInput(p, seed); err != nil {
			return nil, "", err
		}
	}
	if err := g.layout(ph, p, seed); err != nil {
		return nil, "", err
	}
	ph.gen = g
	if ph.Count == 0 {
		return nil, "", fmt.Errorf("the profile plans no requests (check --benchmark-duration, --request-rate and the fixed-schedule offsets)")
	}
	return ph, digest, nil
}

// openInput reads --input-file as its dataset kind, checks that it has
// what the endpoint type sends, and sets how its prompts are taken. It
// returns the digest a worker checks it reads too.
func (g *gen) openInput(p *config.Profile, seed uint64) (string, error) {
	kind := p.DatasetKind()
	// Each repeat its own words and blocks (none served from another's
	// cache); within a run, shared hash ids share their words.
	src, err := dataset.Open(kind, p.InputFile, dataset.Options{Tokenizer: g.b.tok, Words: seeds.Root(g.wordsRoot, seeds.StreamPayloads),
		Blocks: seeds.Root(g.wordsRoot, seeds.StreamBlocks), BlockSize: p.ISLBlockSize, Streaming: p.Streaming, Model: p.Model, Extra: g.b.extra})
	if err != nil {
		return "", err
	}
	g.index, g.convs, g.pools = src.Index, src.Sessions, src.Pools
	if p.SystemPrompt != "" && g.convs != nil {
		for j, m := range g.convs.Lines {
			if m.HasSystem {
				return "", fmt.Errorf("%s line %d: --system-prompt with a conversation's own system turn: AIPerf joins the two into one message; not supported here yet (leave one out)", p.InputFile, j+1)
			}
		}
	}
	if err := g.b.check(src); err != nil {
		return "", err
	}
	g.sampling, g.samplingRoot = p.DatasetSampling, seeds.Root(seed, seeds.StreamSampling)
	g.oslRoot = seeds.Root(seed, seeds.StreamFileOSL)
	if p.CustomDatasetType == config.RandomPool && g.sampling == "" {
		g.sampling = config.SamplingRandom // (AIPerf's random_pool: with replacement)
	}
	return src.Digest, nil
}

// check refuses, before any load is sent, a dataset without what the
// endpoint type sends: each line's audio, images, or query.
func (b *builder) check(src dataset.Source) error {
	p := b.p
	if x := src.Index; x != nil {
		for j, m := range x.Lines {
			switch {
			case b.audioOnly && !m.Audio:
				return fmt.Errorf("%s line %d: --endpoint-type audio_transcription uploads each line's audio: it has no \"audio\" or \"audios\"", p.InputFile, j+1)
			case (b.traits.ImageEdit || b.imagesOnly) && !m.Images:
				return fmt.Errorf("%s line %d: --endpoint-type %s sends each line's images: it has no \"image\" or \"images\"", p.InputFile, j+1, p.EndpointType)
			}
		}
		if b.rankings {
			var missing []string
			for j, m := range x.Lines {
				if !m.Query && len(missing) < 5 {
					missing = append(missing, strconv.Itoa(j+1))
				}
			}
			if len(missing) > 0 {
				return fmt.Errorf("%s: --endpoint-type %s needs each line's query and passages, as \"texts\": [{\"name\": \"query\", \"contents\": [...]}, {\"name\": \"passages\", \"contents\": [...]}]; line %s has none", p.InputFile, p.EndpointType, strings.Join(missing, ", "))
			}
		}
	}
	if b.rankings && src.Pools != nil && !slices.ContainsFunc(src.Pools, dataset.Pool.Queries) {
		return fmt.Errorf("%s: --endpoint-type %s needs a query from one of the folder's pools: a file named queries.jsonl (or query.jsonl), or lines with \"texts\": [{\"name\": \"query\", ...}]", p.InputFile, p.EndpointType)
	}
	return nil
}

// layout decides the profiling phase's loop and request count: a replayed
// schedule, sessions on a rate, an open loop, sessions, a cycling pool
// for a duration, or a count.
func (g *gen) layout(ph *Phase, p *config.Profile, seed uint64) error {
	switch {
	case p.Replays():
		ph.Open = true
		lines, d, err := fixedSchedule(p, g.index)
		if err != nil {
			return err
		}
		g.lines, g.dues, ph.Count = lines, d, len(lines)
	case g.convs != nil && g.convs.Dag != nil && (p.RequestRate > 0 && !p.ConcurrencySet || p.UserCentricRate > 0):
		return fmt.Errorf("%s: dag_jsonl branches run in session slots (--concurrency, with or without --request-rate), each tree in one slot, as AIPerf runs them; not a rate without --concurrency or --user-centric-rate, whose turns each take a tick", p.InputFile)
	case p.MultiTurn() && p.RequestRate > 0 && !p.ConcurrencySet:
		// AIPerf's rate-centric mode (a rate, no --concurrency): every turn
		// takes the next tick of the arrival process, a session's next turn
		// (its answer and delay come) before a new session's first; a tick
		// with neither is skipped. The ticks are split among the workers
		// (Ticks); which turn takes which is the server's pace.
		g.sessions(p, seed)
		ph.Sessions, ph.RateCentric, ph.Rate = true, true, p.RequestRate
		ph.Standalone = g.convs != nil && g.convs.Standalone()
		arr, err := NewArrival(p.ArrivalPattern, p.ArrivalSmoothness)
		if err != nil {
			return err
		}
		g.ticks = &dueSpec{a: arr, seed: seed, rate: p.RequestRate, limit: p.BenchmarkDuration, ramp: p.RateRampDuration, endless: true}
		for _, n := range g.turns {
			ph.Count += n
		}
	case p.MultiTurn() && p.RequestRate > 0:
		// AIPerf's conversation-centric rate (with --concurrency): each
		// session starts on the arrival process, holds its slot for all
		// its turns, and sends each after the previous answer and delay.
		g.sessions(p, seed)
		ph.Sessions, ph.Rate = true, p.RequestRate
		ph.Standalone = g.convs != nil && g.convs.Standalone()
		arr, err := NewArrival(p.ArrivalPattern, p.ArrivalSmoothness)
		if err != nil {
			return err
		}
		g.arrivals = &dueSpec{a: arr, seed: seed, rate: p.RequestRate, n: len(g.turns), limit: p.BenchmarkDuration, ramp: p.RateRampDuration}
		if n := g.arrivals.count(); n < len(g.turns) {
			g.turns = g.turns[:n] // (the sessions due inside --benchmark-duration)
		}
		for _, n := range g.turns {
			ph.Count += n
		}
	case p.RequestRate > 0:
		ph.Open, ph.Rate = true, p.RequestRate
		arr, err := NewArrival(p.ArrivalPattern, p.ArrivalSmoothness)
		if err != nil {
			return err
		}
		// Both stop conditions: whichever comes first, as AIPerf does.
		n := p.RequestCount
		if p.BenchmarkDuration > 0 && !p.RequestCountSet {
			n = 0
		}
		g.arrivals = &dueSpec{a: arr, seed: seed, rate: p.RequestRate, n: n, limit: p.BenchmarkDuration, ramp: p.RateRampDuration}
		ph.Count = g.arrivals.count()
	case p.MultiTurn():
		g.sessions(p, seed)
		ph.Sessions = true
		ph.Standalone = g.convs != nil && g.convs.Standalone()
		if p.UserCentricRate > 0 {
			ph.UserGapNs = seconds(float64(p.NumUsers) / p.UserCentricRate)
		}
		for _, n := range g.turns {
			ph.Count += n
		}
	case p.BenchmarkDuration > 0:
		ph.Cycle, ph.Count = true, p.NumDatasetEntries
		if p.RequestCountSet {
			ph.Limit = p.RequestCount // and at most this many: whichever comes first
		}
	default:
		ph.Count = p.RequestCount
	}
	return nil
}
