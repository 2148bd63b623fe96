package gate

import (
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/aiperf-action/aiperf-action/internal/action"
)

// action.yml declares exactly the inputs the gate reads (and the token,
// which action.New reads), and gives them the gate's defaults.
func TestActionInputsAreTheGates(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../action.yml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Inputs map[string]struct {
			Default *string `yaml:"default"`
		} `yaml:"inputs"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	read := map[string]bool{action.TokenInput: true}
	for _, in := range Inputs {
		read[in.Name] = true
		decl, ok := doc.Inputs[in.Name]
		if !ok {
			t.Errorf("the gate reads input %q, which action.yml does not declare", in.Name)
			continue
		}
		def := ""
		if decl.Default != nil {
			def = *decl.Default
		}
		// An expression (the comment key's matrix) is the runner's to
		// expand; outside Actions the flag's default stands.
		if def != in.Default && !strings.HasPrefix(def, "${{") {
			t.Errorf("input %q: action.yml's default %q, the gate's %q", in.Name, def, in.Default)
		}
	}
	var extra []string
	for name := range doc.Inputs {
		if !read[name] {
			extra = append(extra, name)
		}
	}
	slices.Sort(extra)
	for _, name := range extra {
		t.Errorf("action.yml declares input %q, which the gate never reads", name)
	}
}

// A refresh stores the default branch's baselines: refused on a pull
// request and on a workflow_dispatch of another branch; accepted on main.
func TestRefreshOnlyOnTheDefaultBranch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, c := range []struct {
		event, ref string
		ok         bool
	}{{"workflow_dispatch", "refs/heads/main", true}, {"workflow_dispatch", "refs/heads/feature", false}, {"pull_request", "refs/pull/3/merge", false}} {
		ev := dir + "/" + c.event + ".json"
		os.WriteFile(ev, []byte(`{"repository":{"default_branch":"main"}}`), 0o644)
		vars := map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": c.event, "GITHUB_EVENT_PATH": ev, "GITHUB_REF": c.ref}
		env, err := action.New(func(k string) string { return vars[k] }, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		o := Options{Mode: "refresh", Comment: "always"}
		if err := o.Check(env); (err == nil) != c.ok {
			t.Errorf("%s on %s: %v, want ok %v", c.event, c.ref, err, c.ok)
		}
	}
}

// A config input of several lines is the config itself, not a path.
func TestInlineConfigInput(t *testing.T) {
	t.Parallel()
	in := map[string]string{"config": "server: simulator\nmodel: m\nscenarios:\n  - name: a\n    request-count: 4\n"}
	o := FromInputs(func(k string) string { return in[k] })
	if o.ConfigText == "" || strings.Contains(o.ConfigPath, "\n") {
		t.Fatalf("inline config read as a path: %+v", o)
	}
	cfg, err := ConfigureText(o.ConfigText, o.ConfigPath, func(string) string { return "" })
	if err != nil || cfg.Model != "m" || len(cfg.Scenarios) != 1 {
		t.Fatalf("%v %+v", err, cfg)
	}
	if _, err := ConfigureText("server: simulator\nbogus: 1\n", o.ConfigPath, func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), "(the config input)") {
		t.Errorf("an unknown key: %v", err)
	}
}
