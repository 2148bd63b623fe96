package metrics

// A Fact is what is known of a metric wherever it is aggregated, shown or
// judged: the one table of names, units and directions.
type Fact struct {
	Name    string // AIPerf's tag: run.json's key and --metric's name
	Display string // AIPerf's console name
	Unit    string // the unit of its summary values
	Rate    bool   // a rate over the run (a value and its windows), not a distribution
	// HigherIsBetter marks throughputs: a drop is the regression. For the
	// rest (latencies, lengths) a rise is.
	HigherIsBetter bool
}

// Facts lists every metric in AIPerf's console order.
var Facts = []Fact{
	{Name: TTFT, Display: "Time to First Token", Unit: "ms"},
	{Name: TTST, Display: "Time to Second Token", Unit: "ms"},
	{Name: RequestLatency, Display: "Request Latency", Unit: "ms"},
	{Name: ITL, Display: "Inter Token Latency", Unit: "ms"},
	{Name: ICL, Display: "Inter Chunk Latency", Unit: "ms"},
	{Name: PerUser, Display: "Output Token Throughput Per User", Unit: "tokens/sec/user", HigherIsBetter: true},
	{Name: OSL, Display: "Output Sequence Length", Unit: "tokens"},
	{Name: ISL, Display: "Input Sequence Length", Unit: "tokens"},
	{Name: TTFTFromDue, Display: "Time to First Token from Due", Unit: "ms"},
	{Name: RequestLatencyFromDue, Display: "Request Latency from Due", Unit: "ms"},
	{Name: OutputTput, Display: "Output Token Throughput", Unit: "tokens/sec", Rate: true, HigherIsBetter: true},
	{Name: RequestTput, Display: "Request Throughput", Unit: "requests/sec", Rate: true, HigherIsBetter: true},
	{Name: Goodput, Display: "Goodput", Unit: "requests/sec", Rate: true, HigherIsBetter: true},
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

// unit is a known metric's unit.
func unit(name string) string {
	f, _ := Lookup(name)
	return f.Unit
}
