package hfdata

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/mewkiz/flac"
)

// ASRPrompt is the text beside each clip of a speech dataset, AIPerf's.
const ASRPrompt = "Transcribe this audio."

// MaxSpeechSeconds is the longest clip a speech dataset keeps: longer
// ones are skipped, as AIPerf's ASR loader (and the ASR benchmarks it
// follows) skip them.
const MaxSpeechSeconds = 30

// maxSpeechBytes bounds one decoded clip (30 s of 8 channels at 192 kHz
// in 16 bits is 92 MB; a speech clip is far smaller).
const maxSpeechBytes = 64 << 20

// errNotAudio marks a cell whose bytes are neither FLAC nor WAV: the row
// is skipped and counted, as AIPerf skips a clip soundfile cannot read.
var errNotAudio = errors.New("neither FLAC nor WAV")

// speechOf is an audio cell (the hub's {bytes, path}) as AIPerf sends
// it, "wav,<base64>" of 16-bit PCM at the clip's rate and channels, and
// the clip's length in seconds. FLAC is decoded; a PCM WAV is sent as it
// is. A cell with no bytes is "" and 0.
func speechOf(v any) (string, float64, error) {
	m, ok := v.(map[string]any)
	if !ok {
		if v == nil {
			return "", 0, nil
		}
		return "", 0, fmt.Errorf("not an audio cell ({bytes, path}): %T", v)
	}
	var b []byte
	switch y := m["bytes"].(type) {
	case string:
		b = []byte(y)
	case []byte:
		b = y
	}
	if len(b) == 0 {
		if p, _ := m["path"].(string); p != "" {
			return "", 0, fmt.Errorf("audio by path only (%q), whose bytes are not in the dataset", p)
		}
		return "", 0, nil
	}
	var wav []byte
	var secs float64
	var err error
	switch {
	case bytes.HasPrefix(b, []byte("fLaC")):
		wav, secs, err = flacToWAV(b)
	case len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WAVE":
		wav = b
		secs, err = wavSeconds(b)
	default:
		return "", 0, errNotAudio
	}
	if err != nil {
		return "", 0, err
	}
	return "wav," + base64.StdEncoding.EncodeToString(wav), secs, nil
}

// flacToWAV decodes a FLAC clip into a 16-bit PCM WAV file (deeper
// samples rounded down to 16 bits, shallower ones scaled up), as
// soundfile writes a WAV by default.
func flacToWAV(b []byte) ([]byte, float64, error) {
	s, err := flac.New(bytes.NewReader(b))
	if err != nil {
		return nil, 0, fmt.Errorf("FLAC: %v", err)
	}
	defer s.Close()
	rate, ch, bps := int(s.Info.SampleRate), int(s.Info.NChannels), int(s.Info.BitsPerSample)
	if rate <= 0 || ch <= 0 || bps < 4 || bps > 32 {
		return nil, 0, fmt.Errorf("FLAC: %d Hz, %d channels, %d bits is not a clip", rate, ch, bps)
	}
	if n := s.Info.NSamples; n > 0 && float64(n)/float64(rate) > MaxSpeechSeconds {
		return nil, float64(n) / float64(rate), nil // too long: its length is all that is needed
	}
	var pcm bytes.Buffer
	frames := 0
	for {
		f, err := s.ParseNext()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, 0, fmt.Errorf("FLAC frame %d: %v", frames, err)
		}
		frames++
		if len(f.Subframes) != ch {
			return nil, 0, fmt.Errorf("FLAC frame %d: %d channels, the stream says %d", frames, len(f.Subframes), ch)
		}
		for i := range f.Subframes[0].NSamples {
			for c := range ch {
				v := f.Subframes[c].Samples[i]
				if bps > 16 {
					v >>= bps - 16
				} else if bps < 16 {
					v <<= 16 - bps
				}
				binary.Write(&pcm, binary.LittleEndian, int16(v))
			}
		}
		if pcm.Len() > maxSpeechBytes {
			return nil, 0, fmt.Errorf("FLAC: over %d MiB decoded", maxSpeechBytes>>20)
		}
	}
	secs := float64(pcm.Len()/(2*ch)) / float64(rate)
	if secs > MaxSpeechSeconds {
		return nil, secs, nil
	}
	return wavFile(pcm.Bytes(), rate, ch), secs, nil
}

// wavFile is 16-bit PCM samples as a WAV file.
func wavFile(pcm []byte, rate, ch int) []byte {
	var w bytes.Buffer
	w.WriteString("RIFF")
	binary.Write(&w, binary.LittleEndian, uint32(36+len(pcm)))
	w.WriteString("WAVEfmt ")
	for _, v := range []any{uint32(16), uint16(1), uint16(ch), uint32(rate), uint32(rate * ch * 2), uint16(ch * 2), uint16(16)} {
		binary.Write(&w, binary.LittleEndian, v)
	}
	w.WriteString("data")
	binary.Write(&w, binary.LittleEndian, uint32(len(pcm)))
	w.Write(pcm)
	return w.Bytes()
}

// wavSeconds is a WAV file's length: its data chunk over its byte rate.
func wavSeconds(b []byte) (float64, error) {
	var byteRate uint32
	for off := 12; off+8 <= len(b); {
		id, size := string(b[off:off+4]), int(binary.LittleEndian.Uint32(b[off+4:off+8]))
		body := off + 8
		switch id {
		case "fmt ":
			if body+12 > len(b) {
				return 0, errors.New("WAV: a short fmt chunk")
			}
			byteRate = binary.LittleEndian.Uint32(b[body+8 : body+12])
		case "data":
			if byteRate == 0 {
				return 0, errors.New("WAV: data before fmt, or a zero byte rate")
			}
			size = min(size, len(b)-body)
			return float64(size) / float64(byteRate), nil
		}
		off = body + size + size%2
	}
	return 0, errors.New("WAV: no data chunk")
}
