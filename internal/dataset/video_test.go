package dataset

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// needFFmpeg skips without ffmpeg and ffprobe, unless CI asks for them
// (AIPERF_REQUIRE_FFMPEG), where it fails.
func needFFmpeg(t *testing.T) string {
	t.Helper()
	probe, err := exec.LookPath("ffprobe")
	if _, ferr := FFmpeg(); ferr != nil || err != nil {
		if os.Getenv("AIPERF_REQUIRE_FFMPEG") != "" {
			t.Fatalf("ffmpeg and ffprobe are required here (AIPERF_REQUIRE_FFMPEG): %v %v", ferr, err)
		}
		t.Skip("no ffmpeg/ffprobe on PATH")
	}
	return probe
}

// probe is what ffprobe reads of a clip: its codec, size, frames and
// duration.
func probe(t *testing.T, ffprobe, dataURL string) (codec string, w, h, frames int, format string) {
	t.Helper()
	head, b64, ok := strings.Cut(dataURL, ";base64,")
	if !ok {
		t.Fatalf("not a base64 data URL: %.40s", dataURL)
	}
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "clip")
	os.WriteFile(path, b, 0o644)
	out, err := exec.Command(ffprobe, "-v", "error", "-count_frames", "-show_entries", "stream=codec_name,width,height,nb_read_frames:format=format_name",
		"-of", "json", path).Output()
	if err != nil {
		t.Fatalf("ffprobe: %v", err)
	}
	var r struct {
		Streams []struct {
			Codec  string `json:"codec_name"`
			W      int    `json:"width"`
			H      int    `json:"height"`
			Frames string `json:"nb_read_frames"`
		} `json:"streams"`
		Format struct {
			Name string `json:"format_name"`
		} `json:"format"`
	}
	if err := json.Unmarshal(out, &r); err != nil || len(r.Streams) != 1 {
		t.Fatalf("ffprobe said %s (%v)", out, err)
	}
	s := r.Streams[0]
	n := 0
	for _, c := range s.Frames {
		n = n*10 + int(c-'0')
	}
	return s.Codec, s.W, s.H, n, head + " " + r.Format.Name
}

// Each synthesis type and both containers come out as asked, read back by
// ffprobe: codec, size and frame count (fps × seconds); one seed gives the
// same bytes twice, another seed other bytes.
func TestSyntheticVideo(t *testing.T) {
	ffprobe := needFFmpeg(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	for _, c := range []struct {
		spec       VideoSpec
		codec, fmt string
	}{
		{VideoSpec{Width: 64, Height: 48, FPS: 4, Seconds: 1.5, Synth: "moving_shapes", Format: "webm", Codec: "libvpx-vp9"}, "vp9", "data:video/webm matroska,webm"},
		{VideoSpec{Width: 32, Height: 32, FPS: 10, Seconds: 0.5, Synth: "grid_clock", Format: "mp4", Codec: "libx264"}, "h264", "data:video/mp4 mov,mp4,m4a,3gp,3g2,mj2"},
		{VideoSpec{Width: 16, Height: 16, FPS: 2, Seconds: 2, Synth: "noise", Format: "webm", Codec: "libvpx-vp9"}, "vp9", "data:video/webm matroska,webm"},
	} {
		u, err := SyntheticVideo(c.spec, 7, 0)
		if err != nil {
			t.Fatalf("%+v: %v", c.spec, err)
		}
		codec, w, h, frames, format := probe(t, ffprobe, u)
		if want := int(c.spec.Seconds * float64(c.spec.FPS)); codec != c.codec || w != c.spec.Width || h != c.spec.Height || frames != want || format != c.fmt {
			t.Errorf("%+v: %s %dx%d %d frames %s; want %s %d frames %s", c.spec, codec, w, h, frames, format, c.codec, want, c.fmt)
		}
	}
	spec := VideoSpec{Width: 64, Height: 48, FPS: 4, Seconds: 1, Synth: "moving_shapes", Format: "webm", Codec: "libvpx-vp9"}
	a, _ := SyntheticVideo(spec, 1, 0)
	os.RemoveAll(videoCacheDir()) // encoded again, not read back
	b, _ := SyntheticVideo(spec, 1, 0)
	c, _ := SyntheticVideo(spec, 1, 1)
	d, _ := SyntheticVideo(spec, 2, 0)
	if a != b {
		t.Error("one seed gave two clips")
	}
	if a == c || a == d {
		t.Error("another clip or seed gave the same bytes")
	}
	if err := CheckVideoCodec("no-such-encoder"); err == nil || !strings.Contains(err.Error(), "no video encoder") {
		t.Errorf("a missing encoder: %v", err)
	}
}
