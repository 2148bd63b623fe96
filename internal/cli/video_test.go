package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/sim"
)

// AIPerf's synthetic video command line (its synthetic-dataset tutorial):
// each request carries --video-batch-size clips as video_url parts, webm
// data URLs made before the load; the pool is one clip a dataset entry,
// no more than the requests need; a missing encoder is refused by name.
func TestSyntheticVideoRequests(t *testing.T) {
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		if os.Getenv("AIPERF_REQUIRE_FFMPEG") != "" {
			t.Fatal("ffmpeg is required here (AIPERF_REQUIRE_FFMPEG)")
		}
		t.Skip("no ffmpeg on PATH")
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	cfg := sim.DefaultConfig
	cfg.TTFT, cfg.ITL = time.Millisecond, time.Millisecond
	url, sink := captureBodies(t, sim.New(cfg))
	dir := filepath.Join(t.TempDir(), "run")
	res := runCLI(t, time.Minute, "profile", "-m", "vl", "-u", url, "--endpoint-type", "chat", "--video-width", "64", "--video-height", "48",
		"--video-fps", "4", "--video-duration", "1", "--video-synth-type", "moving_shapes", "--video-codec", "libvpx-vp9", "--video-batch-size", "2",
		"--output-tokens-mean", "4", "--request-count", "3", "--random-seed", "4", "--artifact-dir", dir)
	if res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	clips := map[string]bool{}
	var bodies []string
	for _, sb := range sink.take() {
		if sb.path == "/v1/chat/completions" {
			bodies = append(bodies, sb.body)
		}
	}
	for _, b := range bodies {
		var req struct {
			Messages []struct {
				Content []struct {
					Type     string `json:"type"`
					VideoURL struct {
						URL string `json:"url"`
					} `json:"video_url"`
				} `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal([]byte(b), &req); err != nil || len(req.Messages) == 0 {
			t.Fatalf("body %.200s: %v", b, err)
		}
		n := 0
		for _, c := range req.Messages[len(req.Messages)-1].Content {
			if c.Type == "video_url" {
				n++
				if !strings.HasPrefix(c.VideoURL.URL, "data:video/webm;base64,GkXf") { // (EBML's magic, base64)
					t.Errorf("clip %.40s", c.VideoURL.URL)
				}
				clips[c.VideoURL.URL] = true
			}
		}
		if n != 2 {
			t.Errorf("%d video parts in a request, want 2", n)
		}
	}
	if len(bodies) != 3 || len(clips) != 6 {
		t.Errorf("%d requests with %d distinct clips; want 3 and 6", len(bodies), len(clips))
	}
	res = runCLI(t, time.Minute, "profile", "-m", "vl", "-u", url, "--video-width", "64", "--video-height", "48", "--video-codec", "no_such_codec", "--artifact-dir", t.TempDir())
	if res.code != ExitError || !strings.Contains(res.stderr, `--video-codec no_such_codec: this ffmpeg has no video encoder "no_such_codec"`) || len(sink.take()) != 0 {
		t.Errorf("a missing encoder: exit %d %s", res.code, res.stderr)
	}
}
