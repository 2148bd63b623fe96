package dataset

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
)

// MaxAudioSeconds is the longest synthetic audio clip.
const MaxAudioSeconds = 600

// An Audio is a clip as a request sends it: base64 data and its format
// ("wav" or "mp3"), as OpenAI's input_audio content part carries them.
type Audio struct {
	Data   string
	Format string
}

// SyntheticWAV is a seeded clip of secs seconds, 16-bit or 8-bit PCM at
// rate Hz in channels channels: a few tones whose pitch wanders, with a
// little noise, so it is neither silence nor white noise to a speech
// model's front end.
func SyntheticWAV(secs float64, rate, depth, channels int, r *rand.Rand) (Audio, error) {
	if secs <= 0 || secs > MaxAudioSeconds || rate < 1000 || rate > 192000 || (depth != 8 && depth != 16) || channels < 1 || channels > 2 {
		return Audio{}, fmt.Errorf("synthetic audio: %g s at %d Hz, %d bits, %d channels is out of range", secs, rate, depth, channels)
	}
	n := int(secs * float64(rate))
	bytesPer := depth / 8
	var buf bytes.Buffer
	dataLen := n * channels * bytesPer
	buf.WriteString("RIFF")
	binary.Write(&buf, binary.LittleEndian, uint32(36+dataLen))
	buf.WriteString("WAVEfmt ")
	for _, v := range []any{uint32(16), uint16(1), uint16(channels), uint32(rate),
		uint32(rate * channels * bytesPer), uint16(channels * bytesPer), uint16(depth)} {
		binary.Write(&buf, binary.LittleEndian, v)
	}
	buf.WriteString("data")
	binary.Write(&buf, binary.LittleEndian, uint32(dataLen))
	f := [3]float64{110 + 220*r.Float64(), 220 + 440*r.Float64(), 440 + 880*r.Float64()}
	phase := [3]float64{}
	for i := range n {
		t := float64(i) / float64(rate)
		v := 0.0
		for k := range f {
			phase[k] += 2 * math.Pi * f[k] * (1 + 0.05*math.Sin(2*math.Pi*(0.5+float64(k))*t)) / float64(rate)
			v += math.Sin(phase[k]) / 4
		}
		v += 0.05 * (r.Float64()*2 - 1)
		for range channels {
			if depth == 16 {
				s := uint16(int16(v * 30000))
				buf.WriteByte(byte(s))
				buf.WriteByte(byte(s >> 8))
			} else {
				buf.WriteByte(uint8(128 + v*120))
			}
		}
	}
	return Audio{Data: base64.StdEncoding.EncodeToString(buf.Bytes()), Format: "wav"}, nil
}

// AudioOf is an input file's audio as a request sends it: AIPerf's
// "format,base64" string, or a file (.wav or .mp3; a relative path is the
// input file's folder's), read and encoded.
func AudioOf(ref, base string) (Audio, error) {
	path, format, err := audioFile(ref, base)
	if err != nil || path == "" {
		if err == nil {
			format, data, _ := strings.Cut(ref, ",")
			return Audio{Data: data, Format: format}, nil
		}
		return Audio{}, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return Audio{}, fmt.Errorf("audio %q: %w", ref, err)
	}
	return Audio{Data: base64.StdEncoding.EncodeToString(b), Format: format}, nil
}

// audioFile is ref's file and format ("" for inline "format,base64"
// data), checked to be there.
func audioFile(ref, base string) (path, format string, err error) {
	if f, data, ok := strings.Cut(ref, ","); ok && (f == "wav" || f == "mp3") && len(data) > 0 {
		if _, err := base64.StdEncoding.DecodeString(data); err != nil {
			return "", "", fmt.Errorf("audio %s,...: not base64", f)
		}
		return "", "", nil
	}
	path = ref
	if !filepath.IsAbs(path) {
		path = filepath.Join(base, path)
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".wav":
		format = "wav"
	case ".mp3":
		format = "mp3"
	default:
		return "", "", fmt.Errorf("audio %q: want a .wav or .mp3 file, or \"wav,<base64>\" / \"mp3,<base64>\"", ref)
	}
	if st, err := os.Stat(path); err != nil || st.IsDir() {
		return "", "", fmt.Errorf("audio %q: no such file (a relative path is the input file's folder's)", ref)
	}
	return path, format, nil
}
