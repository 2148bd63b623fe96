package client

import (
	"bufio"
	"bytes"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/aiperf-action/aiperf-action/internal/endpoint"

	"github.com/aiperf-action/aiperf-action/internal/sse"
)

// The HTTP/1.1 codec of the loop: request bytes, response heads and
// chunked bodies. No build tag: it is pure and fuzzed on any OS.

const (
	byLength = iota
	byChunks
	byClose
)

// maxHead bounds a response head; maxBody a whole body kept for parsing.
const (
	maxHead = 64 << 10
	maxBody = 64 << 20
)

// scratch is what parsing a connection's responses reuses: the head's
// reader and the SSE decoder.
type scratch struct {
	dec  *sse.Reader
	head bytes.Reader
	br   *bufio.Reader
}

// respHead is what the loop needs of a response head.
type respHead struct {
	interim bool  // a 1xx head: the real one follows
	status  int   // the status code
	keep    bool  // the connection may serve another request
	sse     bool  // a 200 with Content-Type text/event-stream
	framing int   // byLength, byChunks or byClose
	length  int64 // byLength: the body's length
}

// readHead parses one complete response head (status line, headers and
// the blank line) with net/http's parser.
func (sc *scratch) readHead(h []byte, kind endpoint.Kind) (respHead, error) {
	sc.head.Reset(h)
	if sc.br == nil {
		sc.br = bufio.NewReaderSize(&sc.head, 1024)
	} else {
		sc.br.Reset(&sc.head)
	}
	resp, err := http.ReadResponse(sc.br, nil)
	if err != nil {
		return respHead{}, err
	}
	if resp.StatusCode >= 100 && resp.StatusCode < 200 {
		return respHead{interim: true, status: resp.StatusCode}, nil
	}
	rh := respHead{status: resp.StatusCode, keep: !resp.Close,
		sse: resp.StatusCode == http.StatusOK && endpoint.Streamed(kind, resp.Header.Get("Content-Type"))}
	switch {
	case len(resp.TransferEncoding) > 0 && resp.TransferEncoding[0] == "chunked":
		rh.framing = byChunks
	case resp.ContentLength >= 0:
		rh.framing, rh.length = byLength, resp.ContentLength
	default:
		rh.framing, rh.keep = byClose, false
	}
	return rh, nil
}

// decoder is the connection's stream decoder, reset for a new stream: SSE,
// or lines for a line-framed kind.
func (sc *scratch) decoder(lineFramed bool) *sse.Reader {
	if sc.dec == nil {
		sc.dec = sse.NewDecoder()
	} else {
		sc.dec.Reset()
	}
	if lineFramed {
		sc.dec.Lines()
	}
	return sc.dec
}

// headEnd is where the response head ends in b (after its blank line), or
// -1 while it is incomplete.
func headEnd(b []byte) int {
	i := bytes.Index(b, []byte("\r\n\r\n"))
	if i < 0 {
		return -1
	}
	return i + 4
}

// chunks decodes a chunked body as it arrives.
type chunks struct {
	state int // 0: size line, 1: data, 2: the CRLF after data, 3: trailer, 4: done
	left  int64
	line  []byte
}

var errChunk = errors.New("malformed chunked encoding")

// decode feeds b; out gets the payload. It reports the body's end.
func (d *chunks) decode(b []byte, out func([]byte)) (bool, error) {
	for len(b) > 0 && d.state != 4 {
		if d.state == 1 {
			n := min(int64(len(b)), d.left)
			out(b[:n])
			b, d.left = b[n:], d.left-n
			if d.left == 0 {
				d.state = 2
			}
			continue
		}
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			if len(d.line)+len(b) > 4096 {
				return false, errChunk
			}
			d.line = append(d.line, b...)
			return false, nil
		}
		line := append(d.line, b[:i]...)
		d.line = line[:0]
		b = b[i+1:]
		line = bytes.TrimRight(line, "\r")
		switch d.state {
		case 0:
			if j := bytes.IndexByte(line, ';'); j >= 0 {
				line = line[:j]
			}
			line = bytes.TrimSpace(line)
			if len(line) == 0 || len(line) > 15 {
				return false, errChunk
			}
			var n int64
			for _, c := range line {
				switch {
				case '0' <= c && c <= '9':
					n = n<<4 | int64(c-'0')
				case 'a' <= c && c <= 'f':
					n = n<<4 | int64(c-'a'+10)
				case 'A' <= c && c <= 'F':
					n = n<<4 | int64(c-'A'+10)
				default:
					return false, errChunk
				}
			}
			if n == 0 {
				d.state = 3
			} else {
				d.state, d.left = 1, n
			}
		case 2:
			if len(line) != 0 {
				return false, errChunk
			}
			d.state = 0
		case 3:
			if len(line) == 0 {
				d.state = 4
			}
		}
	}
	return d.state == 4, nil
}

// headerValue keeps a value on its header line.
var headerValue = strings.NewReplacer("\r", " ", "\n", " ")

// fastConf is what the loop's requests share: the address and the request
// head up to the per-request headers.
type fastConf struct {
	addr string
	head []byte
}

// newFastConf prepares the loop's requests, or returns nil where the URL
// is not plain HTTP (TLS and the rest stay with net/http).
func newFastConf(c *Client, target string) *fastConf {
	u, err := url.Parse(target)
	if err != nil || u.Scheme != "http" || u.User != nil || u.Host == "" {
		return nil
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	h := http.Header{}
	c.setHeaders(h, "")
	host := u.Host
	if v := h.Get("Host"); v != "" { // a --header Host: wins, once, as with net/http's req.Host
		host = v
		h.Del("Host")
	}
	var b bytes.Buffer
	b.WriteString("POST " + u.RequestURI() + " HTTP/1.1\r\nHost: " + host + "\r\nUser-Agent: " + userAgent + "\r\n")
	h.Write(&b)
	return &fastConf{addr: addr, head: b.Bytes()}
}

// request is the whole request: head, id, length and body.
func (f *fastConf) request(body []byte, requestID string) []byte {
	b := make([]byte, 0, len(f.head)+len(body)+96)
	b = append(b, f.head...)
	if requestID != "" {
		b = append(b, "X-Request-Id: "...)
		b = append(b, headerValue.Replace(requestID)...)
		b = append(b, "\r\n"...)
	}
	b = append(b, "Content-Length: "...)
	b = strconv.AppendInt(b, int64(len(body)), 10)
	b = append(b, "\r\n\r\n"...)
	return append(b, body...)
}
