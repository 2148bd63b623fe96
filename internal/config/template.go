package config

import (
	"fmt"
	"os"
	"strings"

	"github.com/aiperf-action/aiperf-action/internal/endpoint"
)

// takePayloadTemplate takes AIPerf's template settings out of
// --extra-inputs, where AIPerf's command lines put them: payload_template
// (a name in endpoint.NamedTemplates, a file, or the Jinja2 template
// itself) and response_field (a JMESPath query). They are the endpoint's,
// not fields of the body.
func (p *Profile) takePayloadTemplate() error {
	var keep []string
	for _, it := range p.ExtraInputs {
		k, v, _ := strings.Cut(it, ":")
		switch strings.TrimSpace(k) {
		case "payload_template":
			v = strings.TrimSpace(v)
			if _, named := endpoint.NamedTemplates[v]; !named && !strings.Contains(v, "{{") && !strings.Contains(v, "{%") {
				b, err := os.ReadFile(v)
				if err != nil {
					return fmt.Errorf("--extra-inputs payload_template:%s: neither a template nor a readable file (%v); named templates: nv-embedqa", v, err)
				}
				v = string(b)
			}
			p.PayloadTemplate = v
		case "response_field":
			if p.ResponseField != "" && p.ResponseField != strings.TrimSpace(v) {
				return fmt.Errorf("--response-field %q and --extra-inputs response_field:%s: give one", p.ResponseField, v)
			}
			p.ResponseField = strings.TrimSpace(v)
		default:
			keep = append(keep, it)
		}
	}
	p.ExtraInputs = keep
	return nil
}

// hasExtraKey reports whether an --extra-inputs item sets key.
func hasExtraKey(items []string, key string) bool {
	for _, it := range items {
		if k, _, ok := strings.Cut(it, ":"); ok && strings.TrimSpace(k) == key {
			return true
		}
	}
	return false
}
