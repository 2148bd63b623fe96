package dataset

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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

// A clip with an audio track (AIPerf's --video-audio-*) holds a video
// stream and an audio stream of the codec, rate and channels asked, as
// ffprobe reads them, about as long as the clip; its frames are the same
// bytes as the clip without a track (decoded and compared), and one seed
// gives the same file twice.
func TestSyntheticVideoAudioTrack(t *testing.T) {
	ffprobe := needFFmpeg(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	for _, c := range []struct {
		format, vcodec, acodec string
		rate, depth, channels  int
		wantRate               int
	}{
		{"mp4", "libx264", "aac", 44100, 16, 2, 44100},
		{"webm", "libvpx-vp9", "libvorbis", 16000, 24, 1, 16000},
		{"webm", "libvpx-vp9", "libopus", 44100, 8, 2, 48000}, // (Opus runs at 48 kHz: ffmpeg resamples)
	} {
		spec := VideoSpec{Width: 32, Height: 32, FPS: 4, Seconds: 1.5, Synth: "moving_shapes", Format: c.format, Codec: c.vcodec,
			AudioChannels: c.channels, AudioRate: c.rate, AudioDepth: c.depth, AudioCodec: c.acodec}
		u, err := SyntheticVideo(spec, 3, 0)
		if err != nil {
			t.Fatalf("%+v: %v", spec, err)
		}
		path := writeClip(t, u)
		out, err := exec.Command(ffprobe, "-v", "error", "-show_entries", "stream=codec_type,codec_name,sample_rate,channels,duration:format=duration",
			"-of", "json", path).Output()
		if err != nil {
			t.Fatalf("ffprobe: %v", err)
		}
		var r struct {
			Streams []struct {
				Type     string `json:"codec_type"`
				Codec    string `json:"codec_name"`
				Rate     string `json:"sample_rate"`
				Channels int    `json:"channels"`
			} `json:"streams"`
			Format struct {
				Duration string `json:"duration"`
			} `json:"format"`
		}
		json.Unmarshal(out, &r)
		wantCodec := map[string]string{"aac": "aac", "libvorbis": "vorbis", "libopus": "opus"}[c.acodec]
		var sawVideo, sawAudio bool
		for _, s := range r.Streams {
			switch s.Type {
			case "video":
				sawVideo = true
			case "audio":
				sawAudio = s.Codec == wantCodec && s.Rate == strconv.Itoa(c.wantRate) && s.Channels == c.channels
			}
		}
		d, _ := strconv.ParseFloat(r.Format.Duration, 64)
		if !sawVideo || !sawAudio || d < 1.3 || d > 1.8 {
			t.Errorf("%s %s: ffprobe read %s", c.format, c.acodec, out)
		}
		// The same frames as the clip without a track.
		silent := spec
		silent.AudioChannels = 0
		v, err := SyntheticVideo(silent, 3, 0)
		if err != nil {
			t.Fatal(err)
		}
		if a, b := frames(t, path), frames(t, writeClip(t, v)); !bytes.Equal(a, b) || len(a) == 0 {
			t.Errorf("%s %s: the track changed the frames (%d and %d bytes)", c.format, c.acodec, len(a), len(b))
		}
		os.RemoveAll(videoCacheDir())
		if again, _ := SyntheticVideo(spec, 3, 0); again != u {
			t.Errorf("%s %s: one seed gave two files", c.format, c.acodec)
		}
	}
}

// NoiseWAV writes the header its depth needs and samples of about a
// quarter of full scale, each depth's own width.
func TestNoiseWAV(t *testing.T) {
	for _, depth := range []int{8, 16, 24, 32} {
		b := NoiseWAV(0.5, 8000, depth, 2, rand.New(rand.NewPCG(1, 2)))
		n := 4000 * 2
		if len(b) != 44+n*depth/8 || string(b[:4]) != "RIFF" || int(binary.LittleEndian.Uint16(b[34:])) != depth || binary.LittleEndian.Uint16(b[22:]) != 2 {
			t.Fatalf("%d bits: %d bytes, header % x", depth, len(b), b[:44])
		}
		var sum2 float64
		full := float64(int64(1)<<(depth-1) - 1)
		for i := range n {
			p := b[44+i*depth/8:]
			var s int64
			switch depth {
			case 8:
				s = int64(p[0]) - 128
			case 16:
				s = int64(int16(binary.LittleEndian.Uint16(p)))
			case 24:
				s = int64(int32(uint32(p[0])<<8|uint32(p[1])<<16|uint32(p[2])<<24) >> 8)
			case 32:
				s = int64(int32(binary.LittleEndian.Uint32(p)))
			}
			sum2 += (float64(s) / full) * (float64(s) / full)
		}
		if rms := math.Sqrt(sum2 / float64(n)); rms < 0.22 || rms > 0.28 {
			t.Errorf("%d bits: RMS %.3f of full scale, want about 0.25", depth, rms)
		}
	}
}

func writeClip(t *testing.T, dataURL string) string {
	t.Helper()
	_, b64, _ := strings.Cut(dataURL, ";base64,")
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "clip")
	os.WriteFile(path, b, 0o644)
	return path
}

// frames is a clip's video decoded to raw RGB.
func frames(t *testing.T, path string) []byte {
	t.Helper()
	bin, _ := FFmpeg()
	out, err := exec.Command(bin, "-v", "error", "-i", path, "-map", "0:v", "-f", "rawvideo", "-pix_fmt", "rgb24", "-").Output()
	if err != nil {
		t.Fatalf("decoding %s: %v", path, err)
	}
	return out
}
