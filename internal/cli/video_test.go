package cli

import (
	"encoding/base64"
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

	// With an audio track (--video-audio-*): an MP4 clip whose second
	// stream is AAC (AIPerf's default in MP4), stereo at 16 kHz.
	res = runCLI(t, time.Minute, "profile", "-m", "vl", "-u", url, "--video-width", "64", "--video-height", "48", "--video-duration", "1",
		"--video-format", "mp4", "--video-codec", "libx264", "--video-audio-num-channels", "2", "--video-audio-sample-rate", "16",
		"--output-tokens-mean", "4", "--request-count", "1", "--artifact-dir", t.TempDir())
	if res.code != 0 {
		t.Fatalf("with a track: exit %d\n%s", res.code, res.stderr)
	}
	var body string
	for _, sb := range sink.take() {
		if sb.path == "/v1/chat/completions" {
			body = sb.body
		}
	}
	_, b64, ok := strings.Cut(body, "data:video/mp4;base64,")
	b64, _, _ = strings.Cut(b64, `"`)
	clip, err := base64.StdEncoding.DecodeString(b64)
	if !ok || err != nil {
		t.Fatalf("no mp4 clip in %.200s (%v)", body, err)
	}
	path := filepath.Join(t.TempDir(), "clip.mp4")
	os.WriteFile(path, clip, 0o644)
	if out, err := exec.Command("ffprobe", "-v", "error", "-show_entries", "stream=codec_name,sample_rate,channels", "-of", "csv=p=0", path).Output(); err != nil ||
		strings.Fields(string(out))[1] != "aac,16000,2" {
		t.Errorf("ffprobe read %q (%v); want h264, then aac,16000,2", out, err)
	}
	for _, c := range []struct{ args, want []string }{
		{[]string{"--video-audio-num-channels", "1", "--video-audio-codec", "aac"}, []string{"--video-audio-codec aac cannot go in a webm file"}},
		{[]string{"--video-audio-num-channels", "3"}, []string{"--video-audio-num-channels 3: want 0 (no audio track), 1 or 2"}},
		{[]string{"--video-audio-num-channels", "1", "--video-audio-sample-rate", "200000"}, []string{"--video-audio-sample-rate 200000: want 8000 to 96000 Hz"}},
	} {
		res = runCLI(t, time.Minute, append([]string{"profile", "-m", "vl", "-u", url, "--video-width", "64", "--video-height", "48", "--artifact-dir", t.TempDir()}, c.args...)...)
		if res.code != ExitError || !strings.Contains(res.stderr, c.want[0]) || len(sink.take()) != 0 {
			t.Errorf("%v: exit %d %s", c.args, res.code, res.stderr)
		}
	}
}
