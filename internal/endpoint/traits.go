package endpoint

// Traits are what the rest of the tool needs to know of an endpoint type
// besides its codec: how its streams are framed, what its requests carry,
// what its answers count. Each Kind declares its own (the small marker
// interfaces below, one file a type); TraitsOf reads them once, so no
// package outside this one asserts a Kind's interfaces.
type Traits struct {
	LineFramed   bool     // streams are newline-delimited JSON (Ollama's), not SSE
	Ranking      bool     // each request a query and passages
	TokenIn      bool     // the prompt goes as the profile's tokenizer's ids
	TokenOut     bool     // streamed content is comma-separated ids; OSL counts them
	Unbounded    bool     // the API takes no output length: --osl is refused
	Cumulative   bool     // each streamed event repeats the text so far
	EndsWithBody bool     // a stream ends with its last token event (no [DONE])
	WholeOnly    bool     // the API does not stream
	Unit         string   // a non-token answer's unit of items (embeddings, rankings); "" for generated text
	Form         FormBody // requests are sent as a form the plan's JSON is turned into; nil: as JSON
	Poll         Polled   // the answer is a job to poll; nil: the answer itself
	// Media-only types: each request is its images (image_retrieval), its
	// audio clip (audio_transcription), or a prompt with images to edit
	// (image_edit).
	ImageRetrieval     bool
	AudioTranscription bool
	ImageEdit          bool
}

// NonToken reports an answer that is not generated text: it is good when
// it holds items, and it cannot stream.
func (t Traits) NonToken() bool { return t.Unit != "" }

// TraitsOf reads k's traits.
func TraitsOf(k Kind) Traits {
	var t Traits
	_, t.LineFramed = k.(LineFramed)
	_, t.Ranking = k.(Ranking)
	_, t.TokenIn = k.(TokenIn)
	_, t.TokenOut = k.(TokenOut)
	_, t.Unbounded = k.(Unbounded)
	_, t.Cumulative = k.(Cumulative)
	_, t.EndsWithBody = k.(BodyEnded)
	_, t.WholeOnly = k.(WholeOnly)
	if nt, ok := k.(NonToken); ok {
		t.Unit = nt.Unit()
	}
	t.Form, _ = k.(FormBody)
	t.Poll, _ = k.(Polled)
	_, t.ImageRetrieval = k.(ImageRetrieval)
	_, t.AudioTranscription = k.(AudioTranscription)
	_, t.ImageEdit = k.(ImageEdit)
	return t
}
