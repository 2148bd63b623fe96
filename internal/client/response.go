package client

import (
	"context"
	"fmt"
	"io"

	"github.com/aiperf-action/aiperf-action/internal/endpoint"
	"github.com/aiperf-action/aiperf-action/internal/record"
	"github.com/aiperf-action/aiperf-action/internal/tokenizer"
)

func (c *Client) readWhole(ctx context.Context, body io.Reader, rec *record.Record, clock func() int64) {
	b, err := io.ReadAll(body)
	rec.End = clock()
	if err != nil {
		c.fail(rec, classify(ctx, err), err.Error())
		return
	}
	c.parseWhole(b, rec)
}

// parseWhole takes a whole (non-streamed) response body into rec.
func (c *Client) parseWhole(b []byte, rec *record.Record) {
	r, err := c.Kind.ParseResponse(b)
	if err != nil {
		c.fail(rec, record.ErrMalformed, fmt.Sprintf("%q: %v", snippet(b), err))
		return
	}
	if r.ServerErr != "" {
		c.fail(rec, record.ErrServer, snippet([]byte(r.ServerErr)))
		return
	}
	if r.Usage != nil {
		rec.ServerISL, rec.ServerOSL = r.Usage.PromptTokens, r.Usage.CompletionTokens
	}
	if unit := c.tr().Unit; unit != "" {
		rec.Items = r.Items
		if r.Items == 0 {
			rec.ErrKind, rec.ErrMsg = record.ErrEmpty, "the response held no "+unit
		}
		return // nothing generated: no OSL
	}
	if r.Content == "" && r.Reasoning == "" && r.Items > 0 {
		rec.Items = r.Items // a template's answer found to be embeddings or rankings: nothing generated
		return
	}
	c.output(rec, r.Content, r.Reasoning)
	if r.Content == "" && r.Reasoning == "" {
		rec.ErrKind, rec.ErrMsg = record.ErrEmpty, "response had no content"
	}
}

// output takes a response's text into rec: its OSL counted now, or, with
// CountLater, the text kept for the record's owner to count (CountOSL) off
// the request's goroutine, so that a closed loop's next send never waits
// on a tokenizer.
func (c *Client) output(rec *record.Record, text, reasoning string) {
	if c.tr().TokenOut {
		// Token ids: counted as they are, exactly, with no tokenizer.
		if c.KeepOutput {
			rec.Output = text
		}
		rec.OSL, rec.ReasoningTokens = endpoint.CountIDs(text), 0
		return
	}
	if c.KeepOutput || c.CountLater {
		rec.Output = text // (a session's history holds the answers, not the reasoning)
	}
	if c.CountLater && !c.KeepOutput {
		rec.Reasoning, rec.OSLPending = reasoning, true
		return
	}
	count(rec, text, reasoning, c.Tokenizer())
}

// count sets a record's OSL, reasoning included, and its reasoning tokens.
// Each text is counted on its own, as the server generates and counts them.
func count(rec *record.Record, text, reasoning string, tok *tokenizer.Tokenizer) {
	rec.ReasoningTokens = 0
	if reasoning != "" {
		rec.ReasoningTokens = tok.Count(reasoning)
	}
	rec.OSL = tok.Count(text) + rec.ReasoningTokens
}

// CountOSL counts a record's output that CountLater left for later, and
// lets its text go.
func CountOSL(rec *record.Record, tok *tokenizer.Tokenizer) {
	if !rec.OSLPending {
		return
	}
	if tok == nil {
		tok = tokenizer.Builtin()
	}
	count(rec, rec.Output, rec.Reasoning, tok)
	rec.Output, rec.Reasoning, rec.OSLPending = "", "", false
}

// Tokenizer is Tok, or the builtin when Tok is nil.
func (c *Client) Tokenizer() *tokenizer.Tokenizer {
	if c.Tok == nil {
		return tokenizer.Builtin()
	}
	return c.Tok
}
