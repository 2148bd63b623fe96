package client

import (
	"fmt"
	"testing"
)

// Found by FuzzResponse: an interim head (100 Continue, 103 Early Hints)
// and the real response in one read. The bytes after the interim head
// waited for a read that never came, and the request hung until the
// server closed or the timeout.
func TestInterimHeadSharesARead(t *testing.T) {
	t.Parallel()
	ev := "data: {\"choices\":[{\"delta\":{\"content\":\" w\"}}]}\n\ndata: [DONE]\n\n"
	resp := []byte("HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\nHTTP/1.1 100 Continue\r\n\r\n" +
		"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" +
		fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(ev), ev))
	got := feedResponse(resp, nil)
	want := fedOutcome{over: true, recorded: true, keep: true, status: 200, osl: 1, chunks: 1}
	if got != want {
		t.Fatalf("one read: %+v, want %+v", got, want)
	}
}
