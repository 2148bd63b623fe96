package dataset

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// VideoSpec is a synthetic video as AIPerf's --video-* flags ask for it.
type VideoSpec struct {
	Width, Height int
	FPS           int
	Seconds       float64
	Synth         string // moving_shapes, grid_clock or noise
	Format        string // webm or mp4
	Codec         string // an ffmpeg encoder: libvpx-vp9, libx264, …
	// An audio track of Gaussian noise as long as the clip (AIPerf's
	// --video-audio-*), none while AudioChannels is 0: AudioRate Hz,
	// AudioDepth bits, encoded by AudioCodec (aac, libvorbis or libopus).
	AudioChannels int
	AudioRate     int
	AudioDepth    int
	AudioCodec    string
}

// Video synthesis limits: a clip's side and length.
const (
	MaxVideoSide    = 4096
	MaxVideoSeconds = 60
)

// VideoSynths are the synthesis types, as AIPerf names them.
var VideoSynths = []string{"moving_shapes", "grid_clock", "noise"}

// FFmpeg is the ffmpeg binary videos are encoded with (AIPERF_FFMPEG, or
// ffmpeg on PATH), or an error saying how to get one.
func FFmpeg() (string, error) {
	if p := os.Getenv("AIPERF_FFMPEG"); p != "" {
		return p, nil
	}
	p, err := exec.LookPath("ffmpeg")
	if err != nil {
		return "", errors.New("synthetic video is encoded with ffmpeg, as AIPerf's is, and none is on PATH (apt-get install ffmpeg, or set AIPERF_FFMPEG)")
	}
	return p, nil
}

var encoders struct {
	once sync.Once
	list string
	err  error
}

// CheckVideoCodec says whether ffmpeg has the encoder codec (its
// "ffmpeg -encoders" list, read once).
func CheckVideoCodec(codec string) error {
	encoders.once.Do(func() {
		bin, err := FFmpeg()
		if err != nil {
			encoders.err = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, bin, "-hide_banner", "-encoders").Output()
		if err != nil {
			encoders.err = fmt.Errorf("%s -encoders: %v", bin, err)
			return
		}
		encoders.list = string(out)
	})
	if encoders.err != nil {
		return encoders.err
	}
	for _, line := range strings.Split(encoders.list, "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[1] == codec && strings.HasPrefix(f[0], "V") {
			return nil
		}
	}
	return fmt.Errorf("this ffmpeg has no video encoder %q (ffmpeg -encoders lists them)", codec)
}

// SyntheticVideo is clip k of spec under seed, as a data URL: frames drawn
// here from the seed and encoded by ffmpeg bit-exactly on one thread, so
// one seed gives the same bytes each time with one ffmpeg build. Clips are
// kept in the user's cache folder by what made them (spec, seed, clip,
// ffmpeg build), so a worker reads what the controller encoded before the
// load.
func SyntheticVideo(spec VideoSpec, seed uint64, k int) (string, error) {
	bin, err := FFmpeg()
	if err != nil {
		return "", err
	}
	key := sha256.Sum256(fmt.Appendf(nil, "%+v|%d|%d|%s|%s", spec, seed, k, bin, ffmpegBuild(bin)))
	mt := "video/" + spec.Format
	cache := videoCacheDir()
	path := filepath.Join(cache, hex.EncodeToString(key[:12])+"."+spec.Format)
	if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
		return "data:" + mt + ";base64," + base64.StdEncoding.EncodeToString(b), nil
	}
	// (the track's noise from a source of its own, so a clip's frames are
	// the same with and without one)
	b, err := encodeVideo(bin, spec, rand.New(rand.NewPCG(seed, uint64(k))), rand.New(rand.NewPCG(seed, uint64(k)|1<<63)))
	if err != nil {
		return "", err
	}
	if os.MkdirAll(cache, 0o755) == nil {
		if f, err := os.CreateTemp(cache, ".clip-*"); err == nil {
			_, werr := f.Write(b)
			if cerr := f.Close(); werr == nil && cerr == nil {
				os.Rename(f.Name(), path) // (a failed cache write only costs the next run an encode)
			}
			os.Remove(f.Name())
		}
	}
	return "data:" + mt + ";base64," + base64.StdEncoding.EncodeToString(b), nil
}

func videoCacheDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "aiperf-action", "video")
	}
	return filepath.Join(os.TempDir(), "aiperf-action-video")
}

var builds sync.Map // ffmpeg path → its first -version line

func ffmpegBuild(bin string) string {
	if v, ok := builds.Load(bin); ok {
		return v.(string)
	}
	out, _ := exec.Command(bin, "-hide_banner", "-version").Output()
	v, _, _ := strings.Cut(string(out), "\n")
	builds.Store(bin, v)
	return v
}

// VideoAudioCodecs are the audio encoders a clip's track may have, as
// AIPerf names them, and the containers each goes in.
var VideoAudioCodecs = map[string][]string{"aac": {"mp4"}, "libvorbis": {"webm", "mp4"}, "libopus": {"webm", "mp4"}}

// VideoAudioCodec is AIPerf's default track encoder for a container: aac
// in MP4, Vorbis in WebM.
func VideoAudioCodec(format string) string {
	if format == "mp4" {
		return "aac"
	}
	return "libvorbis"
}

// NoiseWAV is secs of Gaussian noise (σ a quarter of full scale, clipped)
// as a PCM WAV file: 8-bit unsigned, or 16, 24 or 32-bit signed, each
// channel its own samples.
func NoiseWAV(secs float64, rate, depth, channels int, r *rand.Rand) []byte {
	n := int(secs * float64(rate))
	bytesPer := depth / 8
	dataLen := n * channels * bytesPer
	b := make([]byte, 0, 44+dataLen)
	b = append(b, "RIFF"...)
	b = binary.LittleEndian.AppendUint32(b, uint32(36+dataLen))
	b = append(b, "WAVEfmt "...)
	b = binary.LittleEndian.AppendUint32(b, 16)
	b = binary.LittleEndian.AppendUint16(b, 1)
	b = binary.LittleEndian.AppendUint16(b, uint16(channels))
	b = binary.LittleEndian.AppendUint32(b, uint32(rate))
	b = binary.LittleEndian.AppendUint32(b, uint32(rate*channels*bytesPer))
	b = binary.LittleEndian.AppendUint16(b, uint16(channels*bytesPer))
	b = binary.LittleEndian.AppendUint16(b, uint16(depth))
	b = append(b, "data"...)
	b = binary.LittleEndian.AppendUint32(b, uint32(dataLen))
	full := float64(int64(1)<<(depth-1) - 1)
	for range n * channels {
		v := max(-1, min(1, 0.25*r.NormFloat64()))
		s := int64(math.Round(v * full))
		switch depth {
		case 8:
			b = append(b, byte(128+s))
		case 16:
			b = binary.LittleEndian.AppendUint16(b, uint16(s))
		case 24:
			b = append(b, byte(s), byte(s>>8), byte(s>>16))
		default:
			b = binary.LittleEndian.AppendUint32(b, uint32(s))
		}
	}
	return b
}

// codecArgs are each codec family's settings: fast, one thread, a
// quality target rather than a bit rate.
func codecArgs(codec string) []string {
	switch {
	case strings.Contains(codec, "vpx-vp9"):
		return []string{"-deadline", "realtime", "-cpu-used", "8", "-b:v", "0", "-crf", "40", "-row-mt", "0"}
	case strings.Contains(codec, "vpx"):
		return []string{"-deadline", "realtime", "-cpu-used", "8", "-b:v", "1M"}
	case codec == "libx264" || codec == "libx265":
		return []string{"-preset", "ultrafast", "-crf", "30", "-pix_fmt", "yuv420p"}
	}
	return nil
}

// encodeVideo draws the frames and pipes them through ffmpeg into a file
// of the container asked for.
func encodeVideo(bin string, spec VideoSpec, r, noise *rand.Rand) ([]byte, error) {
	frames := max(1, int(math.Round(spec.Seconds*float64(spec.FPS))))
	dir, err := os.MkdirTemp("", "aiperf-video-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "clip."+spec.Format)
	args := []string{"-hide_banner", "-loglevel", "error", "-nostdin", "-y",
		"-f", "rawvideo", "-pix_fmt", "rgb24", "-s", fmt.Sprintf("%dx%d", spec.Width, spec.Height), "-r", fmt.Sprint(spec.FPS), "-i", "pipe:0"}
	if spec.AudioChannels > 0 {
		wav := filepath.Join(dir, "track.wav")
		if err := os.WriteFile(wav, NoiseWAV(spec.Seconds, spec.AudioRate, spec.AudioDepth, spec.AudioChannels, noise), 0o600); err != nil {
			return nil, err
		}
		args = append(args, "-i", wav, "-map", "0:v", "-map", "1:a", "-c:a", spec.AudioCodec, "-shortest", "-flags:a", "+bitexact")
	} else {
		args = append(args, "-an")
	}
	args = append(args, "-c:v", spec.Codec, "-threads", "1")
	args = append(args, codecArgs(spec.Codec)...)
	args = append(args, "-fflags", "+bitexact", "-flags:v", "+bitexact", "-map_metadata", "-1")
	if spec.Format == "mp4" {
		args = append(args, "-movflags", "+faststart")
	}
	args = append(args, out)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("ffmpeg: %w", err)
	}
	draw := newFrames(spec, r)
	frame := make([]byte, spec.Width*spec.Height*3)
	var werr error
	for f := 0; f < frames && werr == nil; f++ {
		draw(f, frame)
		_, werr = in.Write(frame)
	}
	in.Close()
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("ffmpeg (-c:v %s, %s): %v: %s", spec.Codec, spec.Format, err, strings.TrimSpace(stderr.String()))
	}
	if werr != nil {
		return nil, fmt.Errorf("ffmpeg: writing frames: %v", werr)
	}
	return os.ReadFile(out)
}

// newFrames returns the drawer of spec's frames (RGB, row by row).
func newFrames(spec VideoSpec, r *rand.Rand) func(f int, px []byte) {
	w, h := spec.Width, spec.Height
	set := func(px []byte, x, y int, c [3]byte) {
		if x >= 0 && y >= 0 && x < w && y < h {
			copy(px[(y*w+x)*3:], c[:])
		}
	}
	fill := func(px []byte, c [3]byte) {
		for i := 0; i < len(px); i += 3 {
			copy(px[i:], c[:])
		}
	}
	color := func() [3]byte { return [3]byte{byte(r.IntN(256)), byte(r.IntN(256)), byte(r.IntN(256))} }
	switch spec.Synth {
	case "noise":
		return func(_ int, px []byte) {
			for i := range px {
				px[i] = byte(r.IntN(256))
			}
		}
	case "grid_clock":
		bg, line, hand := color(), color(), color()
		cell := max(8, min(w, h)/8)
		return func(f int, px []byte) {
			fill(px, bg)
			for y := 0; y < h; y++ {
				for x := 0; x < w; x++ {
					if x%cell == 0 || y%cell == 0 {
						set(px, x, y, line)
					}
				}
			}
			// A hand a turn every second, and the frame number in binary
			// as squares along the top, so each frame is told apart.
			a := 2 * math.Pi * float64(f) / float64(max(spec.FPS, 1))
			cx, cy, rad := w/2, h/2, float64(min(w, h))*0.4
			for t := 0.0; t < rad; t += 0.5 {
				set(px, cx+int(t*math.Sin(a)), cy-int(t*math.Cos(a)), hand)
			}
			sq := max(2, cell/2)
			for bit := 0; bit < 16 && (bit+1)*sq < w; bit++ {
				if f>>bit&1 == 1 {
					for y := 0; y < sq; y++ {
						for x := bit * sq; x < (bit+1)*sq-1; x++ {
							set(px, x, y, hand)
						}
					}
				}
			}
		}
	}
	// moving_shapes: a few squares and discs of seeded colour, size and
	// velocity, bouncing off the edges over a seeded background.
	type shape struct {
		x, y, vx, vy, size float64
		c                  [3]byte
		disc               bool
	}
	bg := color()
	shapes := make([]shape, 3+r.IntN(4))
	for i := range shapes {
		s := float64(max(2, min(w, h)/(6+r.IntN(6))))
		shapes[i] = shape{x: r.Float64() * float64(w), y: r.Float64() * float64(h), vx: (r.Float64()*2 - 1) * float64(w) / 8, vy: (r.Float64()*2 - 1) * float64(h) / 8,
			size: s, c: color(), disc: r.IntN(2) == 0}
	}
	return func(f int, px []byte) {
		fill(px, bg)
		for _, s := range shapes {
			x := bounce(s.x+s.vx*float64(f), float64(w))
			y := bounce(s.y+s.vy*float64(f), float64(h))
			half := int(s.size / 2)
			for dy := -half; dy <= half; dy++ {
				for dx := -half; dx <= half; dx++ {
					if !s.disc || dx*dx+dy*dy <= half*half {
						set(px, int(x)+dx, int(y)+dy, s.c)
					}
				}
			}
		}
	}
}

// bounce folds a position moving along [0, n) back off its edges.
func bounce(p, n float64) float64 {
	if n <= 0 {
		return 0
	}
	p = math.Mod(math.Abs(p), 2*n)
	if p >= n {
		p = 2*n - p
	}
	return p
}
