package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/endpoint"
	"github.com/aiperf-action/aiperf-action/internal/record"
)

// maxPolls bounds a job's polls (with the request timeout, which bounds
// their time).
const maxPolls = 100_000

// poll follows a job the submission's answer (first) names: it GETs
// target/{id} every PollEvery until an answer says the job is done, and
// that answer is the request's (its End the time it came).
func (c *Client) poll(ctx context.Context, p endpoint.Polled, target, requestID string, first io.Reader, rec *record.Record, clock func() int64) {
	body, err := io.ReadAll(io.LimitReader(first, 16<<20))
	for n := 0; ; n++ {
		rec.End = clock()
		if err != nil {
			c.fail(rec, classify(ctx, err), err.Error())
			return
		}
		id, done, jerr := p.Job(body)
		if jerr != nil {
			c.fail(rec, record.ErrMalformed, fmt.Sprintf("%q: %v", snippet(body), jerr))
			return
		}
		if done {
			c.parseWhole(body, rec)
			return
		}
		if n == maxPolls {
			c.fail(rec, record.ErrTimeout, fmt.Sprintf("job %s not done after %d polls", id, n))
			return
		}
		t := time.NewTimer(p.PollEvery())
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			c.fail(rec, classify(ctx, ctx.Err()), fmt.Sprintf("job %s: %v", id, ctx.Err()))
			return
		}
		req, rerr := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(target, "/")+"/"+url.PathEscape(id), nil)
		if rerr != nil {
			c.fail(rec, record.ErrTransport, rerr.Error())
			return
		}
		c.setHeaders(req.Header, requestID)
		req.Header.Del("Content-Type")
		req.Header.Set("User-Agent", userAgent)
		if v := req.Header.Get("Host"); v != "" {
			req.Host = v
			req.Header.Del("Host")
		}
		resp, derr := c.HTTP.Do(req)
		if derr != nil {
			c.fail(rec, classify(ctx, derr), derr.Error())
			return
		}
		if resp.StatusCode != http.StatusOK {
			msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
			resp.Body.Close()
			rec.Status = resp.StatusCode
			c.fail(rec, fmt.Sprintf("http_%d", resp.StatusCode), "polling job "+id+": "+snippet(msg))
			return
		}
		body, err = io.ReadAll(io.LimitReader(resp.Body, 16<<20))
		resp.Body.Close()
	}
}
