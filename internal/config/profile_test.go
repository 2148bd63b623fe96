package config

import (
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestValidateNamesEveryFlag(t *testing.T) {
	t.Parallel()
	p := DefaultProfile
	p.Model = ""
	p.URL = "ftp://x"
	p.Concurrency = -1
	p.RequestCount = 0
	p.ExtraInputs = []string{"novalue"}
	p.Headers = []string{"bad header"}
	p.Goodput = "ttft:3"
	err := p.Validate()
	if err == nil {
		t.Fatal("want errors")
	}
	for _, flag := range []string{"--model", "--url", "--concurrency -1", "--request-count 0", "--extra-inputs", "--header", "--goodput"} {
		if !strings.Contains(err.Error(), flag) {
			t.Errorf("error does not name %s:\n%v", flag, err)
		}
	}
}

// --url is a base URL, as in AIPerf: the type's path (or --endpoint) is
// appended to its path, /v1 is not doubled, a base that already ends in
// the type's path is the endpoint, and a scheme defaults to http.
func TestTargetURL(t *testing.T) {
	t.Parallel()
	cases := []struct{ url, typ, endpoint, want string }{
		{"localhost:8000", EndpointChat, "", "http://localhost:8000/v1/chat/completions"},
		{"http://127.0.0.1:9/", EndpointCompletions, "", "http://127.0.0.1:9/v1/completions"},
		{"http://gw/qwen", EndpointChat, "", "http://gw/qwen/v1/chat/completions"},
		{"http://gw/qwen/", EndpointCompletions, "", "http://gw/qwen/v1/completions"},
		{"https://gw:8443/team/a/v1", EndpointChat, "", "https://gw:8443/team/a/v1/chat/completions"},
		{"http://h/v1/", EndpointCompletions, "", "http://h/v1/completions"},
		{"http://h/v1/chat/completions", EndpointChat, "", "http://h/v1/chat/completions"},
		{"http://h/qwen/v1/chat/completions", EndpointChat, "", "http://h/qwen/v1/chat/completions"},
		{"http://h", EndpointChat, "v2/gen", "http://h/v2/gen"},
		{"http://gw/qwen", EndpointChat, "/generate", "http://gw/qwen/generate"},
		{"http://gw/v1", EndpointChat, "/v1/embeddings", "http://gw/v1/embeddings"},
		{"http://gw/p?api-version=2", EndpointChat, "", "http://gw/p/v1/chat/completions?api-version=2"},
		{"[::1]:8000", EndpointChat, "", "http://[::1]:8000/v1/chat/completions"},
	}
	for _, c := range cases {
		p := Profile{Target: Target{URL: c.url, EndpointType: c.typ, Endpoint: c.endpoint}}
		got, err := p.TargetURL()
		if err != nil || got != c.want {
			t.Errorf("TargetURL(%q, --endpoint %q) = %q, %v; want %q", c.url, c.endpoint, got, err, c.want)
		}
	}
	for _, bad := range []string{"ftp://h", "http://", "http://h/#x", ""} {
		if got, err := (&Profile{Target: Target{URL: bad, EndpointType: EndpointChat}}).TargetURL(); err == nil {
			t.Errorf("TargetURL(%q) = %q, want an error", bad, got)
		}
	}
}

// Several --url flags are several servers, in order (AIPerf's
// --url-strategy round_robin); --custom-endpoint is --endpoint; a bad
// strategy or a bad later URL names itself.
func TestURLFlags(t *testing.T) {
	t.Parallel()
	parse := func(args ...string) (*Profile, error) {
		p := DefaultProfile
		fs := pflag.NewFlagSet("profile", pflag.ContinueOnError)
		fs.SetOutput(io.Discard)
		p.Bind(fs)
		return &p, fs.Parse(args)
	}
	p, err := parse("--url", "http://gw/qwen", "--custom-endpoint", "/generate")
	if err != nil || p.URL != "http://gw/qwen" || p.Endpoint != "/generate" || len(p.MoreURLs) != 0 {
		t.Fatalf("%+v, %v", p, err)
	}
	p, err = parse("-u", "http://a:1", "--url", "b:2", "--url-strategy", "round_robin", "-m", "m")
	if err != nil || p.URL != "http://a:1" || len(p.MoreURLs) != 1 {
		t.Fatalf("two URLs: %+v, %v", p, err)
	}
	if got, err := p.TargetURLs(); err != nil || len(got) != 2 || got[1] != "http://b:2/v1/chat/completions" {
		t.Errorf("targets %v, %v", got, err)
	}
	p.URLStrategy = "random"
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "--url-strategy") {
		t.Errorf("a bad strategy: %v", err)
	}
	p.URLStrategy, p.MoreURLs = "", []string{"ftp://c"}
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "2nd") {
		t.Errorf("a bad 2nd URL: %v", err)
	}
}

func TestExtraInputsJSON(t *testing.T) {
	t.Parallel()
	m, err := ParseExtraInputs([]string{"ignore_eos:true", "temperature:0.5", "stop:abc", "obj:{\"a\":1}"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"ignore_eos": "true", "temperature": "0.5", "stop": `"abc"`, "obj": `{"a":1}`}
	for k, v := range want {
		if string(m[k]) != v {
			t.Errorf("%s = %s, want %s", k, m[k], v)
		}
	}
}

// --max-error-rate reads a percentage as compare's does: 5%, 5 and 0.05
// are one rate; anything else is refused naming the flag.
func TestMaxErrorRateIsAPercentage(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"5%", "5", "0.05"} {
		p := DefaultProfile
		fs := pflag.NewFlagSet("profile", pflag.ContinueOnError)
		p.Bind(fs)
		if err := fs.Parse([]string{"--max-error-rate", v}); err != nil || math.Abs(p.MaxErrorRate-5) > 1e-9 {
			t.Errorf("--max-error-rate %s: %v, %g%%", v, err, p.MaxErrorRate)
		}
	}
	p := DefaultProfile
	fs := pflag.NewFlagSet("profile", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	p.Bind(fs)
	if err := fs.Parse([]string{"--max-error-rate", "lots"}); err == nil || !strings.Contains(err.Error(), "max-error-rate") {
		t.Errorf("--max-error-rate lots: %v", err)
	}
}

// --custom-dataset-type: mooncake_trace replays on the trace's timestamps
// (an open loop, with no --fixed-schedule needed); AIPerf's other types are
// named as AIPerf's and not supported here yet, never as unknown.
func TestCustomDatasetType(t *testing.T) {
	t.Parallel()
	p := DefaultProfile
	p.Model, p.URL, p.InputFile, p.CustomDatasetType = "m", "127.0.0.1:1", "trace.jsonl", MooncakeTrace
	if err := p.Validate(); err != nil || !p.OpenLoop() || !p.Replays() {
		t.Fatalf("mooncake_trace: %v, open %v", err, p.OpenLoop())
	}
	p.RequestRate = 5
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "with --request-rate") {
		t.Errorf("mooncake_trace with a rate: %v", err)
	}
	p.RequestRate, p.CustomDatasetType = 0, "sharegpt"
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "an AIPerf dataset type not supported here yet") {
		t.Errorf("sharegpt as a custom type: %v", err)
	}
	p.CustomDatasetType, p.InputFile = MooncakeTrace, ""
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "needs --input-file") {
		t.Errorf("no file: %v", err)
	}
}

// One of AIPerf's flags that this tool lacks is named as AIPerf's, and an
// unknown flag stays unknown.
func TestAIPerfOnlyFlagsAreNamed(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ arg, want string }{
		{"--mlflow-experiment", "--mlflow-experiment is an AIPerf flag that aiperf-action does not support: MLflow and Weights & Biases have no maintained Go client"},
		{"--wandb-project", "--wandb-project is an AIPerf flag that aiperf-action does not support: MLflow and Weights & Biases"},
		{"--bogus-flag", "unknown flag: --bogus-flag"},
	} {
		p := DefaultProfile
		fs := pflag.NewFlagSet("profile", pflag.ContinueOnError)
		fs.SetOutput(io.Discard)
		p.Bind(fs)
		if err := ExplainFlagError(fs.Parse([]string{c.arg, "3"})); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", c.arg, err)
		}
	}
}

// Multi-turn sessions are refused, naming why, where they can't run yet.
func TestMultiTurnRefusals(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		edit func(*Profile)
		want string
	}{
		{func(p *Profile) { p.EndpointType = EndpointCompletions }, "need --endpoint-type chat"},
		{func(p *Profile) { p.RequestRate, p.FixedSchedule, p.InputFile = 3, true, "x.jsonl" }, "not on a fixed schedule yet"},
		{func(p *Profile) { p.NumUsers = 3 }, "--user-centric-rate and --num-users go together"},
		{func(p *Profile) { p.TurnDelayMean = math.Inf(1) }, "not a finite, non-negative number"},
	} {
		p := DefaultProfile
		p.Model, p.URL, p.ConversationNum, p.ConversationTurnMean = "m", "127.0.0.1:1", 3, 2
		c.edit(&p)
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want %q: %v", c.want, err)
		}
	}
	p := DefaultProfile
	p.Model, p.URL, p.ConversationNum, p.ConversationTurnMean = "m", "127.0.0.1:1", 3, 2
	p.RequestRate, p.Concurrency, p.ConcurrencySet = 3, 2, true // (conversation-centric: allowed)
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	p.RequestRate, p.ConcurrencySet = 0, false
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
}

// AIPerf's forms with a meaning of their own here: --concurrency next to
// --user-centric-rate is a cap that binds only below --num-users;
// --num-conversations with a random_pool file is its request count; a
// Jinja2 payload_template is the template endpoint's body.
func TestAIPerfFormsWithTheirMeaning(t *testing.T) {
	t.Parallel()
	p := DefaultProfile
	p.Model, p.URL, p.UserCentricRate, p.NumUsers, p.ConversationTurnMean = "m", "127.0.0.1:1", 1, 15, 4
	p.Concurrency, p.ConcurrencySet = 15, true
	if err := p.Validate(); err != nil || p.Ceiling() != 15 {
		t.Fatalf("--concurrency 15 --num-users 15: %v, ceiling %d", err, p.Ceiling())
	}
	p.Concurrency = 14
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "--concurrency 14 below --num-users 15") {
		t.Errorf("--concurrency 14 --num-users 15: %v", err)
	}

	parse := func(args ...string) Profile {
		t.Helper()
		p := DefaultProfile
		fs := pflag.NewFlagSet("profile", pflag.ContinueOnError)
		fs.SetOutput(io.Discard)
		p.Bind(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		p.NoteSet(fs)
		return p
	}
	if p := parse("--custom-dataset-type", "random_pool", "--num-conversations", "50"); p.RequestCount != 50 || p.ConversationNum != 0 || p.MultiTurn() {
		t.Errorf("random_pool --num-conversations 50: %d requests, %d conversations", p.RequestCount, p.ConversationNum)
	}
	if p := parse("--custom-dataset-type", "random_pool", "--num-conversations", "50", "--request-count", "7"); p.RequestCount != 7 {
		t.Errorf("--request-count 7 given: %d requests", p.RequestCount)
	}
	if p := parse("--num-conversations", "5"); p.ConversationNum != 5 {
		t.Errorf("synthetic --num-conversations 5: %d conversations", p.ConversationNum)
	}

	// AIPerf's Jinja2 payload_template and response_field leave the body's
	// extras for the endpoint; a file is read; a bad one is named.
	p = DefaultProfile
	p.Model, p.URL, p.EndpointType = "m", "127.0.0.1:1", "template"
	p.ExtraInputs = []string{`payload_template:{"text": {{ text|tojson }}}`, "response_field:out.text", "top_k:3"}
	if err := p.Validate(); err != nil || p.PayloadTemplate != `{"text": {{ text|tojson }}}` || p.ResponseField != "out.text" || !slices.Equal(p.ExtraInputs, []string{"top_k:3"}) {
		t.Errorf("payload_template: %v %q %q %q", err, p.PayloadTemplate, p.ResponseField, p.ExtraInputs)
	}
	file := filepath.Join(t.TempDir(), "t.json")
	os.WriteFile(file, []byte(`{"q": {{ text|tojson }}}`), 0o644)
	p.ExtraInputs = []string{"payload_template:" + file}
	if err := p.Validate(); err != nil || p.PayloadTemplate != `{"q": {{ text|tojson }}}` {
		t.Errorf("payload_template file: %v %q", err, p.PayloadTemplate)
	}
	for in, want := range map[string]string{
		"payload_template:/no/such/file":            "neither a template nor a readable file",
		"payload_template:{\"q\": {{ text|tojson }": "payload template",
		"response_field:choices[0":                  "not a JMESPath query",
	} {
		p := DefaultProfile
		p.Model, p.URL, p.EndpointType = "m", "127.0.0.1:1", "template"
		p.ExtraInputs = []string{in}
		if !strings.HasPrefix(in, "payload_template") {
			p.ExtraInputs = append(p.ExtraInputs, "payload_template:nv-embedqa")
		}
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
}

// An --input-file without --custom-dataset-type is told apart as AIPerf
// tells it: request bodies ("messages") are raw_payload, "turns" are
// multi_turn, other lines plain JSONL; a raw body that asks for no stream
// is refused under --streaming, naming its line.
func TestDatasetTypeDetection(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	for _, c := range []struct{ text, want string }{
		{"\n{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"model\": \"m\"}\n", RawPayload},
		{`{"session_id": "a", "turns": [{"text": "hi"}]}`, MultiTurnFile},
		{`{"text": "hi"}`, ""},
		{`{"conversation_id": "c", "messages": [{"role": "user", "content": "hi"}]}`, ""},
	} {
		if got := detectDatasetType(write("in.jsonl", c.text)); got != c.want {
			t.Errorf("%s: detected %q, want %q", c.text, got, c.want)
		}
	}
	p := DefaultProfile
	p.Model, p.URL, p.Streaming = "m", "127.0.0.1:1", true
	p.InputFile = write("raw.jsonl", `{"messages": [{"role": "user", "content": "a"}], "stream": true}
{"messages": [{"role": "user", "content": "b"}]}
`)
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "raw.jsonl line 2 does not ask for a stream") || p.CustomDatasetType != RawPayload {
		t.Errorf("raw body without stream: %v (type %q)", err, p.CustomDatasetType)
	}
	p.Streaming = false
	if err := p.Validate(); err != nil {
		t.Errorf("not streaming: %v", err)
	}
}

// A sweep's several values are the profile command's; one run (a gate
// scenario, a search) refuses them by name.
func TestSweepIsTheProfileCommands(t *testing.T) {
	t.Parallel()
	p := DefaultProfile
	fs := pflag.NewFlagSet("profile", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	p.Bind(fs)
	flags, _ := SplitArgs(fs, []string{"-m", "m", "-u", "127.0.0.1:1", "--concurrency", "4", "--concurrency", "2,8", "16"})
	if err := fs.Parse(flags); err != nil {
		t.Fatal(err)
	}
	p.NoteSet(fs)
	if p.Concurrency != 2 || p.Sweep == nil || !slices.Equal(p.Sweep.Values, []float64{2, 8, 16}) || !p.ConcurrencySet {
		t.Fatalf("--concurrency 4 --concurrency 2,8 16: %d %+v", p.Concurrency, p.Sweep)
	}
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "a sweep of several values is run by `aiperf-action profile`") {
		t.Errorf("one run with a sweep: %v", err)
	}
	q := p.At(2)
	if q.Concurrency != 16 || q.Sweep != nil || q.Validate() != nil {
		t.Errorf("At(2): %d %+v %v", q.Concurrency, q.Sweep, q.Validate())
	}
}
