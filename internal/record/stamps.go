package record

// Stamps counts how a worker's response reads were timed. It is the one
// stamps type from the client's loop to run.json: the loop fills the read
// counts, the worker adds net/http's, the controller sums the workers', and
// run.json's tool_health.stamps carries the total and its Source.
type Stamps struct {
	KernelReads uint64 `json:"kernel_reads"` // event-loop reads stamped with the kernel's receive time
	OtherReads  uint64 `json:"other_reads"`  // event-loop reads with no kernel stamp: stamped when the read returned
	NetHTTP     uint64 `json:"net_http_requests"`
	// Of the requests read through net/http, the ones whose connection kept
	// the kernel's receive time (stamped with the newest data's arrival; the
	// rest when their reads returned).
	NetHTTPKernel uint64 `json:"net_http_kernel"`
}

// Add adds o's counts to s.
func (s *Stamps) Add(o Stamps) {
	s.KernelReads += o.KernelReads
	s.OtherReads += o.OtherReads
	s.NetHTTP += o.NetHTTP
	s.NetHTTPKernel += o.NetHTTPKernel
}

// Source says what the stamps were: "kernel" when every read had the
// kernel's receive time, "read" when none did, else "mixed".
func (s Stamps) Source() string {
	switch {
	case s.OtherReads == 0 && s.NetHTTP == s.NetHTTPKernel && s.KernelReads+s.NetHTTPKernel > 0:
		return "kernel"
	case s.KernelReads == 0 && s.NetHTTPKernel == 0:
		return "read"
	}
	return "mixed"
}
