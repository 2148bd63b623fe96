package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Reachable checks, before any load, that something listens at target.
func Reachable(ctx context.Context, target string) error {
	u, err := url.Parse(target)
	if err != nil {
		return err
	}
	host := u.Host
	if u.Port() == "" {
		if u.Scheme == "https" {
			host = net.JoinHostPort(u.Hostname(), "443")
		} else {
			host = net.JoinHostPort(u.Hostname(), "80")
		}
	}
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := (&net.Dialer{}).DialContext(dctx, "tcp", host)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Err != nil {
			return op.Err
		}
		return err
	}
	return c.Close()
}

// DiscoverModel is the first model the server at base (a --url) lists at
// /v1/models, as AIPerf takes it when -m is not given. headers are sent
// with the request (an API key's Authorization among them).
func DiscoverModel(ctx context.Context, base string, headers http.Header) (string, error) {
	raw := strings.TrimRight(strings.TrimSpace(base), "/")
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u := raw + "/v1/models"
	if strings.HasSuffix(raw, "/v1") {
		u = raw + "/models"
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	for k, v := range headers {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: HTTP %d", u, resp.StatusCode)
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(&list); err != nil {
		return "", fmt.Errorf("GET %s: not an OpenAI model list: %v", u, err)
	}
	for _, m := range list.Data {
		if strings.TrimSpace(m.ID) != "" {
			return m.ID, nil
		}
	}
	return "", fmt.Errorf("GET %s: the list has no model", u)
}
