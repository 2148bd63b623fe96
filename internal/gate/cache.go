package gate

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/config"
)

// resetPaths are the servers' prefix-cache resets.
var resetPaths = map[string]string{
	config.CacheResetVLLM:   "/reset_prefix_cache",
	config.CacheResetSGLang: "/flush_cache",
}

// resetCache clears the server's prefix cache, where the config asks for a
// reset that is a call (llama.cpp's is a request field). A reset that
// fails stops the gate: its runs would measure what it could not clear.
func (g *gate) resetCache(ctx context.Context, target string) error {
	path, ok := resetPaths[g.cfg.CacheReset]
	if !ok {
		return nil
	}
	url := strings.TrimSuffix(target, "/") + path
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, url, nil)
	if err != nil {
		return fmt.Errorf("cache-reset %s: %w", g.cfg.CacheReset, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("cache-reset %s: POST %s: %w", g.cfg.CacheReset, url, err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("cache-reset %s: POST %s answered %s (is the server %s, and does it allow the reset?)", g.cfg.CacheReset, url, resp.Status, g.cfg.CacheReset)
	}
	return nil
}
