package config

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/aiperf-action/aiperf-action/internal/endpoint"
)

// TargetURL is the full URL requests are posted to. --url is a base URL,
// as in AIPerf: the endpoint type's path (or --endpoint) is appended to
// whatever path it has, so http://gw/qwen posts to
// http://gw/qwen/v1/chat/completions. A base that ends in /v1 doesn't get
// it twice, a base that already ends in the type's whole path is taken as
// the endpoint, and a URL without a scheme gets http://.
func (p *Profile) TargetURL() (string, error) {
	raw := strings.TrimSpace(p.URL)
	if raw == "" {
		return "", errors.New("is required")
	}
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("%q: scheme must be http or https", p.URL)
	}
	if u.Host == "" {
		return "", fmt.Errorf("%q: no host", p.URL)
	}
	if u.Fragment != "" {
		return "", fmt.Errorf("%q: a URL to post to has no #fragment", p.URL)
	}
	def := DefaultPath(p.EndpointType)
	if t, err := endpoint.Lookup(p.EndpointType); err == nil && p.Streaming && t.StreamPath != "" {
		def = t.StreamPath
	}
	// The path is joined escaped (a {model} in it is the model's name, one
	// path segment whatever it holds), then set in both forms.
	escaped := JoinPath(u.EscapedPath(), p.Endpoint, strings.ReplaceAll(def, "{model}", url.PathEscape(p.Model)))
	if u.Path, err = url.PathUnescape(escaped); err != nil {
		return "", fmt.Errorf("%q: path %v", p.URL, err)
	}
	u.RawPath = escaped
	return u.String(), nil
}

// TargetURLs is TargetURL for every --url, in order.
func (p *Profile) TargetURLs() ([]string, error) {
	var out []string
	for i, raw := range append([]string{p.URL}, p.MoreURLs...) {
		q := *p
		q.URL = raw
		u, err := q.TargetURL()
		if err != nil {
			if i > 0 {
				err = fmt.Errorf("the %s: %w", ordinal(i+1), err)
			}
			return nil, err
		}
		out = append(out, u)
	}
	return out, nil
}

func ordinal(n int) string {
	switch n {
	case 2:
		return "2nd"
	case 3:
		return "3rd"
	}
	return strconv.Itoa(n) + "th"
}

// JoinPath appends an endpoint's path to a base URL's: custom (--endpoint)
// when given, else def, the endpoint type's. Without custom, a base that
// already ends in def is the whole endpoint; a /v1 at the base's end and
// at the path's start is kept once.
func JoinPath(base, custom, def string) string {
	if strings.TrimSpace(custom) == "" && def == "" {
		return base // (a type with no path, raw: the URL as given)
	}
	base = strings.TrimRight(base, "/")
	path := "/" + strings.TrimLeft(def, "/")
	if strings.TrimSpace(custom) != "" {
		path = "/" + strings.TrimLeft(strings.TrimSpace(custom), "/")
	} else if strings.HasSuffix(base, path) {
		return base
	}
	if strings.HasSuffix(base, "/v1") && (path == "/v1" || strings.HasPrefix(path, "/v1/")) {
		path = strings.TrimPrefix(path, "/v1")
	}
	return base + path
}

// DefaultPath is an endpoint type's path (chat's for an unknown type,
// which Validate refuses).
func DefaultPath(endpointType string) string {
	if t, err := endpoint.Lookup(endpointType); err == nil {
		return t.Path
	}
	return "/v1/chat/completions"
}

// ParseHeaders parses -H "Name: value" (or Name:value) headers.
func ParseHeaders(hs []string) ([][2]string, error) {
	var out [][2]string
	var errs []error
	for _, h := range hs {
		k, v, ok := strings.Cut(h, ":")
		k = strings.TrimSpace(k)
		if !ok || k == "" || strings.ContainsAny(k, " \t") {
			errs = append(errs, fmt.Errorf("-H/--header %q: want \"Name: value\"", h))
			continue
		}
		out = append(out, [2]string{k, strings.TrimSpace(v)})
	}
	return out, errors.Join(errs...)
}
