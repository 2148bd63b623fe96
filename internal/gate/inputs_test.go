package gate

import (
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
