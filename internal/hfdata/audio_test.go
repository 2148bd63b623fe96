package hfdata

import (
	"bytes"
	"encoding/base64"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/aiperf-action/aiperf-action/internal/dataset"
)

// A FLAC file from another encoder (ffmpeg's, with its linear prediction
// and Rice coding, not verbatim frames) decodes to the very samples it
// was made from.
func TestSpeechFromFFmpegFLAC(t *testing.T) {
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		if os.Getenv("AIPERF_REQUIRE_FFMPEG") != "" {
			t.Fatal("ffmpeg is required here (AIPERF_REQUIRE_FFMPEG)")
		}
		t.Skip("no ffmpeg on PATH")
	}
	for _, c := range []struct{ rate, ch int }{{16000, 1}, {44100, 2}} {
		src, err := dataset.SyntheticWAV(2.5, c.rate, 16, c.ch, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatal(err)
		}
		wav, _ := base64.StdEncoding.DecodeString(src.Data)
		dir := t.TempDir()
		in, out := filepath.Join(dir, "in.wav"), filepath.Join(dir, "out.flac")
		if err := os.WriteFile(in, wav, 0o644); err != nil {
			t.Fatal(err)
		}
		if b, err := exec.Command("ffmpeg", "-nostdin", "-loglevel", "error", "-i", in, "-c:a", "flac", "-compression_level", "8", out).CombinedOutput(); err != nil {
			t.Fatalf("ffmpeg: %v %s", err, b)
		}
		fl, _ := os.ReadFile(out)
		ref, secs, err := speechOf(map[string]any{"bytes": fl, "path": "out.flac"})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := base64.StdEncoding.DecodeString(ref[len("wav,"):])
		if secs != 2.5 || !bytes.Equal(got[44:], wav[44:]) || !bytes.Equal(got[:44], wav[:44]) {
			t.Errorf("%d Hz × %d: %g s, %d bytes of samples, want 2.5 s and the %d bytes ffmpeg was given, the same", c.rate, c.ch, secs, len(got)-44, len(wav)-44)
		}
	}
}

func TestSpeechCells(t *testing.T) {
	wav, _ := base64.StdEncoding.DecodeString(must(dataset.SyntheticWAV(1.25, 8000, 16, 1, rand.New(rand.NewPCG(3, 4)))).Data)
	ref, secs, err := speechOf(map[string]any{"bytes": string(wav), "path": "x.wav"})
	if err != nil || secs != 1.25 || ref != "wav,"+base64.StdEncoding.EncodeToString(wav) {
		t.Errorf("a WAV is sent as it is: %g s, %v", secs, err)
	}
	if _, _, err := speechOf(map[string]any{"bytes": "ID3\x04mp3 frames", "path": "x.mp3"}); !errors.Is(err, errNotAudio) {
		t.Errorf("mp3: %v, want skipped as neither FLAC nor WAV", err)
	}
	if _, _, err := speechOf(map[string]any{"path": "/data/x.flac"}); err == nil {
		t.Error("a clip by path only must say its bytes are not in the dataset")
	}
	if _, _, err := speechOf(map[string]any{"bytes": "fLaC broken"}); err == nil || errors.Is(err, errNotAudio) {
		t.Errorf("a broken FLAC must be an error naming it: %v", err)
	}
	if _, _, err := speechOf([]float64{0.1, 0.2}); err == nil {
		t.Error("a decoded array (not {bytes, path}) must be refused")
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
