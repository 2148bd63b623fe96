package metrics

// Order is the display order of metrics, AIPerf's console order.
var Order = []string{TTFT, TTST, RequestLatency, ITL, ICL, PerUser, OSL, ISL, TTFTFromDue, RequestLatencyFromDue, OutputTput, RequestTput, Goodput}

var displayNames = map[string]string{
	TTFT:                  "Time to First Token",
	TTST:                  "Time to Second Token",
	RequestLatency:        "Request Latency",
	ITL:                   "Inter Token Latency",
	ICL:                   "Inter Chunk Latency",
	PerUser:               "Output Token Throughput Per User",
	OSL:                   "Output Sequence Length",
	ISL:                   "Input Sequence Length",
	OutputTput:            "Output Token Throughput",
	RequestTput:           "Request Throughput",
	TTFTFromDue:           "Time to First Token from Due",
	RequestLatencyFromDue: "Request Latency from Due",
	Goodput:               "Goodput",
}

// DisplayName is a metric's human name, as AIPerf prints it.
func DisplayName(name string) string {
	if n, ok := displayNames[name]; ok {
		return n
	}
	return name
}
