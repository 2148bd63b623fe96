package metrics

// A Fact is what is known of a metric wherever it is aggregated, shown or
// judged: the one table of names, units and directions.
type Fact struct {
	Name    string // AIPerf's tag: run.json's key and --metric's name
	Display string // AIPerf's console name
	Short   string // the name in a PR comment's table, where width is short
	Unit    string // the unit of its summary values
	Rate    bool   // a rate over the run (a value and its windows), not a distribution
	// HigherIsBetter marks throughputs: a drop is the regression. For the
	// rest (latencies, lengths) a rise is.
	HigherIsBetter bool
}

// Facts lists every metric in AIPerf's console order.
var Facts = []Fact{
	{Name: TTFT, Display: "Time to First Token", Short: "TTFT", Unit: "ms"},
	{Name: TTST, Display: "Time to Second Token", Short: "TTST", Unit: "ms"},
	{Name: RequestLatency, Display: "Request Latency", Short: "Request latency", Unit: "ms"},
	{Name: ITL, Display: "Inter Token Latency", Short: "ITL", Unit: "ms"},
	{Name: ICL, Display: "Inter Chunk Latency", Short: "Inter-chunk latency", Unit: "ms"},
	{Name: PerUser, Display: "Output Token Throughput Per User", Short: "Tokens/s per user", Unit: "tokens/sec/user", HigherIsBetter: true},
	{Name: OSL, Display: "Output Sequence Length", Short: "OSL", Unit: "tokens"},
	{Name: ISL, Display: "Input Sequence Length", Short: "ISL", Unit: "tokens"},
	{Name: TTFTFromDue, Display: "Time to First Token from Due", Short: "TTFT from due", Unit: "ms"},
	{Name: RequestLatencyFromDue, Display: "Request Latency from Due", Short: "Latency from due", Unit: "ms"},
	{Name: TTFO, Display: "Time to First Output Token", Short: "TTFO", Unit: "ms"},
	{Name: ReasoningTokens, Display: "Reasoning Token Count", Short: "Reasoning tokens", Unit: "tokens"},
	{Name: TTFTFromWrite, Display: "Time to First Token from Write", Short: "TTFT from write", Unit: "ms"},
	{Name: ConnSetup, Display: "Connection Setup", Short: "Connection setup", Unit: "ms"},
	{Name: OutputTput, Display: "Output Token Throughput", Short: "Output tokens/s", Unit: "tokens/sec", Rate: true, HigherIsBetter: true},
	{Name: RequestTput, Display: "Request Throughput", Short: "Requests/s", Unit: "requests/sec", Rate: true, HigherIsBetter: true},
	{Name: ItemTput, Display: "Item Throughput", Short: "Items/s", Unit: "items/sec", Rate: true, HigherIsBetter: true},
	{Name: Goodput, Display: "Goodput", Short: "Goodput", Unit: "requests/sec", Rate: true, HigherIsBetter: true},
}

// Order is the display order of metrics, AIPerf's console order.
var Order = func() []string {
	out := make([]string, len(Facts))
	for i, f := range Facts {
		out[i] = f.Name
	}
	return out
}()

// Lookup is the fact of metric name.
func Lookup(name string) (Fact, bool) {
	for _, f := range Facts {
		if f.Name == name {
			return f, true
		}
	}
	return Fact{}, false
}

// DisplayName is a metric's human name, as AIPerf prints it.
func DisplayName(name string) string {
	if f, ok := Lookup(name); ok {
		return f.Display
	}
	return name
}

// ShortName is a metric's name where width is short ("TTFT"); the error
// rate, which is not a metric of the aggregator, is "Error rate".
func ShortName(name string) string {
	if f, ok := Lookup(name); ok {
		return f.Short
	}
	if name == "error_rate" {
		return "Error rate"
	}
	return name
}

// unit is a known metric's unit.
func unit(name string) string {
	f, _ := Lookup(name)
	return f.Unit
}
