package dataset

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/aiperf-action/aiperf-action/internal/seeds"
	"github.com/aiperf-action/aiperf-action/internal/tokenizer"
)

// MaxInputLength is the longest prompt a file line may ask to synthesize
// (4M tokens): a larger one is a mistake that would take the memory.
const MaxInputLength = 1 << 22

// fileLine is the JSONL line shape: a prompt as text, or as a length to
// synthesize (as in trace files), with an optional timestamp in ms, and,
// in a Mooncake trace, the hash ids of its prompt's blocks.
type fileLine struct {
	Timestamp    *float64 `json:"timestamp"`
	Text         *string  `json:"text"`
	InputLength  *int     `json:"input_length"`
	OutputLength *int     `json:"output_length"`
	HashIDs      []int64  `json:"hash_ids"`
	// AIPerf's single_turn and random_pool fields: "texts" (joined by a
	// newline into one prompt), GenAI-Perf's "text_input", and "extra",
	// merged into the request body over --extra-inputs.
	Texts     *texts                     `json:"texts"`
	TextInput *string                    `json:"text_input"`
	Extra     map[string]json.RawMessage `json:"extra"`
	// Fields AIPerf has that are refused here, by name.
	Delay  json.RawMessage `json:"delay"`
	Image  *string         `json:"image"`
	Images []string        `json:"images"`
	Audio  *string         `json:"audio"`
	Audios []string        `json:"audios"`
	Video  *string         `json:"video"`
	Videos []string        `json:"videos"`
	Turns  json.RawMessage `json:"turns"`
	// A dag_jsonl turn's place in its tree (the tool's own JSONL of it).
	Dag *dagMeta `json:"dag"`
}

// text is the line's prompt text: "text", "texts" or "text_input".
func (fl *fileLine) text() *string {
	switch {
	case fl.Text != nil:
		return fl.Text
	case fl.Texts != nil:
		t := fl.Texts.joined()
		return &t
	}
	return fl.TextInput
}

// A NamedText is one of AIPerf's named texts: a rankings line's "query"
// (or "queries") and "passages".
type NamedText struct {
	Name     string   `json:"name"`
	Contents []string `json:"contents"`
}

// texts is AIPerf's "texts": a list of strings (joined by a newline into
// one prompt), or of named texts.
type texts struct {
	plain []string
	named []NamedText
}

func (t *texts) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, &t.plain); err == nil {
		return nil
	}
	t.plain = nil
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&t.named); err != nil {
		return errors.New(`"texts": want a list of strings, or of {"name": ..., "contents": [...]}`)
	}
	for _, n := range t.named {
		if n.Name == "" || n.Contents == nil {
			return errors.New(`"texts": each named text wants a "name" and its "contents"`)
		}
	}
	return nil
}

func (t *texts) joined() string {
	if t.named == nil {
		return strings.Join(t.plain, "\n")
	}
	var all []string
	for _, n := range t.named {
		all = append(all, n.Contents...)
	}
	return strings.Join(all, "\n")
}

// Query is a rankings line's query and passages, from its named texts
// ("query" or "queries", the first of them, and every "passages" text),
// as AIPerf's rankings endpoints take them; ok is false without a query.
func Query(named []NamedText) (query string, passages []string, ok bool) {
	for _, n := range named {
		switch n.Name {
		case "query", "queries":
			if !ok && len(n.Contents) > 0 {
				query, ok = n.Contents[0], true
			}
		case "passages":
			passages = append(passages, n.Contents...)
		}
	}
	return query, passages, ok
}

// refused names a field of AIPerf's this loader does not take yet.
func (fl *fileLine) refused() string {
	switch {
	case fl.Delay != nil:
		return `"delay" (give "timestamp" in ms and --fixed-schedule instead)`
	case fl.Turns != nil:
		return `"turns" (a multi_turn conversation: multi-turn sessions are not supported yet)`
	}
	return ""
}

// Blocks is how a Mooncake trace's hash_ids become text: hash id h is a
// block of Size tokens drawn from its own source (Root, h), so that every
// request naming h sends the same words there, and requests that share
// leading hash ids share a prefix a server's cache can hit. A request's
// last block is the first input_length − (n−1)·Size tokens of its own.
type Blocks struct {
	Size int
	Root uint64
}

// orBuiltin is tok, or the builtin tokenizer when tok is nil.
func orBuiltin(tok *tokenizer.Tokenizer) *tokenizer.Tokenizer {
	if tok == nil {
		return tokenizer.Builtin()
	}
	return tok
}

// text is the prompt of n tokens over hash ids ids, in v's words.
func (bl Blocks) text(v *tokenizer.Vocab, ids []int64, n int) string {
	parts := make([]string, len(ids))
	for i, h := range ids {
		size := bl.Size
		if i == len(ids)-1 {
			size = n - bl.Size*(len(ids)-1)
		}
		parts[i] = v.Text(size, seeds.Draw(bl.Root, uint64(h)))
	}
	return strings.Join(parts, " ")
}

// Index is an input file read once, as a stream: each line's place in
// the file and what a plan needs of it without its text (timestamp,
// lengths). A prompt's text is read back from the file, line by line, when
// its request is built, so memory holds ~40 bytes a line, not the file.
type Index struct {
	Path    string
	Lines   []LineMeta
	Digest  string // the file's sha256, taken in the same pass
	tok     *tokenizer.Tokenizer
	blocks  Blocks
	words   uint64  // root of synthesized lines' words: line j draws from its own source
	lengths bool    // every line is lengths only (a BurstGPT CSV): nothing to read back
	raw     bool    // every line is a request body (raw_payload), its text the line
	msPer   float64 // ms per unit of "timestamp"
}

// LineMeta is one line of an indexed file.
type LineMeta struct {
	Off              int64
	Len              int32
	ISL, MaxTokens   int32
	TimestampMs      float64
	HasTime, Derived bool // Derived: the text is made (input_length, hash_ids), not read
	Extra            bool // the line has "extra" body fields (read back with its text)
	Query            bool // the line's named texts have a query (a rankings line)
	Images           bool // the line has "image" or "images"
	Audio            bool // the line has "audio" or "audios"
	Video            bool // the line has "video" or "videos"
}

// videos is the line's "video" and "videos", in that order.
func (fl *fileLine) videos() []string {
	var out []string
	if fl.Video != nil {
		out = append(out, *fl.Video)
	}
	return append(out, fl.Videos...)
}

// audios is the line's "audio" and "audios", in that order.
func (fl *fileLine) audios() []string {
	var out []string
	if fl.Audio != nil {
		out = append(out, *fl.Audio)
	}
	return append(out, fl.Audios...)
}

// images is the line's "image" and "images", in that order.
func (fl *fileLine) images() []string {
	var out []string
	if fl.Image != nil {
		out = append(out, *fl.Image)
	}
	return append(out, fl.Images...)
}

// indexFile reads a JSONL input file as a stream and indexes its lines:
// "text" (its tokens counted with tok; nil: the builtin), or "input_length" (synthesized from words,
// line j from its own source), or a Mooncake trace's "hash_ids" (made of
// blocks, see Blocks), with "output_length" and a "timestamp" in ms.
// Errors name the file and the line.
func indexFile(path string, tok *tokenizer.Tokenizer, words uint64, blocks Blocks) (*Index, error) {
	return indexJSONL(path, tok, words, blocks, 1)
}

// indexBailian reads a Bailian trace (Alibaba's Qwen serving traces):
// indexFile's Mooncake fields with "timestamp" in seconds. Its chat_id,
// parent_chat_id and turn are passed over: each line is a whole request
// as the service saw it (a follow-up's input_length and hash_ids include
// the history), so the lines are replayed as they are, on their
// timestamps, and shared hash_ids share their prefix.
func indexBailian(path string, tok *tokenizer.Tokenizer, words uint64, blocks Blocks) (*Index, error) {
	return indexJSONL(path, tok, words, blocks, 1000)
}

// indexJSONL is indexFile with timestamps multiplied by msPer to make ms.
func indexJSONL(path string, tok *tokenizer.Tokenizer, words uint64, blocks Blocks, msPer float64) (*Index, error) {
	x := &Index{Path: path, tok: orBuiltin(tok), blocks: blocks, words: words, msPer: msPer}
	digest, err := eachLine(path, func(line []byte, n int, off int64, size int) error {
		m, _, perr := x.parse(line, n)
		m.Off, m.Len = off, int32(size)
		x.Lines = append(x.Lines, m)
		return perr
	})
	if err != nil {
		return nil, err
	}
	if len(x.Lines) == 0 {
		return nil, fmt.Errorf("%s: no prompts", path)
	}
	x.Digest = digest
	return x, nil
}

// eachLine reads a JSONL file as a stream, calling f with each non-blank
// line (trimmed), its number, and the offset and size of the line as it
// lies in the file, and returns the file's sha256, taken in the same pass.
// Every line's problem is gathered and returned at once (up to
// maxProblems), not the first alone.
func eachLine(path string, f func(line []byte, n int, off int64, size int) error) (string, error) {
	fh, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("--input-file: %w", err)
	}
	defer fh.Close()
	var problems []error
	sum := sha256.New()
	r := bufio.NewReaderSize(io.TeeReader(fh, sum), 1<<20)
	var off int64
	for n := 1; ; n++ {
		raw, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer: gather it (up to 64 MiB).
			long := append([]byte{}, raw...)
			for errors.Is(err, bufio.ErrBufferFull) && len(long) <= 64<<20 {
				raw, err = r.ReadSlice('\n')
				long = append(long, raw...)
			}
			if len(long) > 64<<20 {
				return "", fmt.Errorf("%s:%d: a line longer than 64 MiB", path, n)
			}
			raw = long
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return "", fmt.Errorf("%s: %w", path, err)
		}
		if line := bytes.TrimSpace(raw); len(line) > 0 {
			if perr := f(line, n, off, len(raw)); perr != nil {
				if problems = append(problems, perr); len(problems) == maxProblems {
					return "", fmt.Errorf("%w\n(stopped after %d problems)", errors.Join(problems...), maxProblems)
				}
			}
		}
		off += int64(len(raw))
		if err != nil { // EOF
			break
		}
	}
	if len(problems) > 0 {
		return "", errors.Join(problems...)
	}
	return hex.EncodeToString(sum.Sum(nil)), nil
}

// maxProblems is how many bad lines indexFile lists before it stops.
const maxProblems = 20

// parse checks one line (number n) and returns what the index keeps of it
// and its text when the line holds one.
func (x *Index) parse(raw []byte, n int) (LineMeta, *fileLine, error) {
	path, blocks := x.Path, x.blocks
	var fl fileLine
	if err := json.NewDecoder(bytes.NewReader(raw)).Decode(&fl); err != nil {
		return LineMeta{}, nil, fmt.Errorf("%s:%d: %v", path, n, err)
	}
	var m LineMeta
	if r := fl.refused(); r != "" {
		return m, nil, fmt.Errorf("%s:%d: %s", path, n, r)
	}
	text := fl.text()
	m.Extra = len(fl.Extra) > 0
	for _, ref := range fl.images() {
		if _, _, err := imageFile(ref, filepath.Dir(path)); err != nil {
			return m, nil, fmt.Errorf("%s:%d: %v", path, n, err)
		}
		m.Images = true
	}
	for _, ref := range fl.audios() {
		if _, _, err := audioFile(ref, filepath.Dir(path)); err != nil {
			return m, nil, fmt.Errorf("%s:%d: %v", path, n, err)
		}
		m.Audio = true
	}
	for _, ref := range fl.videos() {
		if _, _, err := videoFile(ref, filepath.Dir(path)); err != nil {
			return m, nil, fmt.Errorf("%s:%d: %v", path, n, err)
		}
		m.Video = true
	}
	switch {
	case len(fl.HashIDs) > 0 && blocks.Size <= 0:
		return m, nil, fmt.Errorf("%s:%d: \"hash_ids\" is a Mooncake trace's: give --custom-dataset-type mooncake_trace", path, n)
	case len(fl.HashIDs) > 0:
		if fl.InputLength == nil {
			return m, nil, fmt.Errorf("%s:%d: \"hash_ids\" without \"input_length\"", path, n)
		}
		k, in := len(fl.HashIDs), *fl.InputLength
		if in <= blocks.Size*(k-1) || in > blocks.Size*k || in > MaxInputLength {
			return m, nil, fmt.Errorf("%s:%d: \"input_length\" %d does not fit %d hash_ids of %d-token blocks (--isl-block-size): it must be %d to %d",
				path, n, in, k, blocks.Size, blocks.Size*(k-1)+1, blocks.Size*k)
		}
		m.ISL, m.Derived = int32(in), true
	case text != nil:
		c := x.tok.Count(*text)
		if fl.Texts != nil && fl.Texts.named != nil {
			c = 0 // (a rankings line's tokens are its texts', each on its own)
			for _, n := range fl.Texts.named {
				for _, t := range n.Contents {
					c += x.tok.Count(t)
				}
			}
			_, _, m.Query = Query(fl.Texts.named)
		}
		if c > MaxInputLength {
			return m, nil, fmt.Errorf("%s:%d: \"text\" of %d tokens is past %d", path, n, c, MaxInputLength)
		}
		m.ISL = int32(c)
	case fl.InputLength != nil && *fl.InputLength > MaxInputLength:
		return m, nil, fmt.Errorf("%s:%d: \"input_length\" %d is past %d tokens, longer than any model's context", path, n, *fl.InputLength, MaxInputLength)
	case fl.InputLength != nil && *fl.InputLength > 0:
		m.ISL, m.Derived = int32(*fl.InputLength), true
	case m.Images || m.Audio || m.Video: // (media alone, no text)
	default:
		return m, nil, fmt.Errorf("%s:%d: want \"text\" (or \"texts\", \"text_input\") or a positive \"input_length\"", path, n)
	}
	if fl.OutputLength != nil {
		if *fl.OutputLength < 0 || *fl.OutputLength > MaxInputLength {
			return m, nil, fmt.Errorf("%s:%d: \"output_length\" %d: negative or past %d", path, n, *fl.OutputLength, MaxInputLength)
		}
		m.MaxTokens = int32(*fl.OutputLength)
	}
	if fl.Timestamp != nil {
		if *fl.Timestamp < 0 || math.IsInf(*fl.Timestamp, 0) {
			return m, nil, fmt.Errorf("%s:%d: negative \"timestamp\"", path, n)
		}
		m.TimestampMs, m.HasTime = *fl.Timestamp*x.msPer, true
	}
	return m, &fl, nil
}

// LineData is what a request is built from of one line.
type LineData struct {
	Text   string
	Extra  map[string]json.RawMessage
	Named  []NamedText
	Images []string // as requests send them (URLs, files as data URLs)
	Audios []Audio
	Videos []string // URLs, files as data URLs
}

// Read is line j, read back from f (the indexed file).
func (x *Index) Read(j int, f io.ReaderAt) (LineData, error) {
	text, extra, named, images, err := x.read(j, f)
	d := LineData{Text: text, Extra: extra, Named: named, Images: images}
	if err == nil && (x.Lines[j].Audio || x.Lines[j].Video) {
		d.Audios, d.Videos, err = x.readMedia(j, f)
	}
	return d, err
}

// readMedia is line j's audio clips and videos.
func (x *Index) readMedia(j int, f io.ReaderAt) ([]Audio, []string, error) {
	m := x.Lines[j]
	raw := make([]byte, m.Len)
	if _, err := f.ReadAt(raw, m.Off); err != nil && !errors.Is(err, io.EOF) {
		return nil, nil, fmt.Errorf("%s: read line %d again: %w", x.Path, j+1, err)
	}
	var fl fileLine
	if err := json.Unmarshal(bytes.TrimSpace(raw), &fl); err != nil {
		return nil, nil, fmt.Errorf("%s: the file changed since it was read: %v", x.Path, err)
	}
	var out []Audio
	for _, ref := range fl.audios() {
		a, err := AudioOf(ref, filepath.Dir(x.Path))
		if err != nil {
			return nil, nil, fmt.Errorf("%s:%d: %v", x.Path, j+1, err)
		}
		out = append(out, a)
	}
	var videos []string
	for _, ref := range fl.videos() {
		u, err := VideoURL(ref, filepath.Dir(x.Path))
		if err != nil {
			return nil, nil, fmt.Errorf("%s:%d: %v", x.Path, j+1, err)
		}
		videos = append(videos, u)
	}
	return out, videos, nil
}

func (x *Index) read(j int, f io.ReaderAt) (string, map[string]json.RawMessage, []NamedText, []string, error) {
	m := x.Lines[j]
	if x.lengths {
		return x.tok.Words().Text(int(m.ISL), seeds.Draw(x.words, uint64(j))), nil, nil, nil, nil
	}
	raw := make([]byte, m.Len)
	if _, err := f.ReadAt(raw, m.Off); err != nil && !errors.Is(err, io.EOF) {
		return "", nil, nil, nil, fmt.Errorf("%s: read line %d again: %w", x.Path, j+1, err)
	}
	if x.raw {
		var body bytes.Buffer
		if err := json.Compact(&body, bytes.TrimSpace(raw)); err != nil {
			return "", nil, nil, nil, fmt.Errorf("%s: the file changed since it was read: %v", x.Path, err)
		}
		return body.String(), nil, nil, nil, nil
	}
	var fl fileLine
	if err := json.Unmarshal(bytes.TrimSpace(raw), &fl); err != nil {
		return "", nil, nil, nil, fmt.Errorf("%s: the file changed since it was read: %v", x.Path, err)
	}
	var named []NamedText
	if fl.Texts != nil {
		named = fl.Texts.named
	}
	var images []string
	for _, ref := range fl.images() {
		u, err := ImageURL(ref, filepath.Dir(x.Path))
		if err != nil {
			return "", nil, nil, nil, fmt.Errorf("%s:%d: %v", x.Path, j+1, err)
		}
		images = append(images, u)
	}
	switch {
	case len(fl.HashIDs) > 0:
		return x.blocks.text(x.tok.Words(), fl.HashIDs, int(m.ISL)), fl.Extra, nil, images, nil
	case fl.text() != nil:
		return *fl.text(), fl.Extra, named, images, nil
	}
	return x.tok.Words().Text(int(m.ISL), seeds.Draw(x.words, uint64(j))), fl.Extra, nil, images, nil
}

// Raw reports a raw_payload index: a line's text is its request body.
func (x *Index) Raw() bool { return x.raw }
