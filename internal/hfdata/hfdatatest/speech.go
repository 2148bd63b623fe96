package hfdatatest

import (
	"bytes"
	"math"
	"testing"

	"github.com/mewkiz/flac"
	"github.com/mewkiz/flac/frame"
	"github.com/mewkiz/flac/meta"
)

// HubAudio is an audio cell as the hub's parquet stores one.
type HubAudio struct {
	Bytes []byte `parquet:"bytes"`
	Path  string `parquet:"path"`
}

// SpeechRow is a row of openslr/librispeech_asr (its other columns).
type SpeechRow struct {
	File      string   `parquet:"file"`
	Audio     HubAudio `parquet:"audio"`
	Text      string   `parquet:"text"`
	SpeakerID int64    `parquet:"speaker_id"`
	ID        string   `parquet:"id"`
}

// Tone is secs seconds of a tone at rate Hz in bps-bit samples, the same
// in each of ch channels (sample i is Tone(...)[i*ch+c]).
func Tone(secs float64, rate, bps, ch int) []int32 {
	n := int(secs * float64(rate))
	out := make([]int32, 0, n*ch)
	amp := float64(int64(1)<<(bps-1)-1) / 2
	for i := range n {
		v := int32(amp * math.Sin(2*math.Pi*440*float64(i)/float64(rate)))
		for range ch {
			out = append(out, v)
		}
	}
	return out
}

// FLAC encodes interleaved samples as a FLAC file (verbatim subframes).
func FLAC(t testing.TB, samples []int32, rate, bps, ch int) []byte {
	t.Helper()
	n := len(samples) / ch
	var b bytes.Buffer
	info := &meta.StreamInfo{BlockSizeMin: 4096, BlockSizeMax: 4096, SampleRate: uint32(rate),
		NChannels: uint8(ch), BitsPerSample: uint8(bps), NSamples: uint64(n)}
	enc, err := flac.NewEncoder(&b, info)
	if err != nil {
		t.Fatal(err)
	}
	channels := frame.ChannelsMono
	if ch == 2 {
		channels = frame.ChannelsLR
	}
	for off := 0; off < n; off += 4096 {
		size := min(4096, n-off)
		f := &frame.Frame{Header: frame.Header{HasFixedBlockSize: true, BlockSize: uint16(size),
			SampleRate: uint32(rate), Channels: channels, BitsPerSample: uint8(bps), Num: uint64(off / 4096)}}
		for c := range ch {
			s := make([]int32, size)
			for i := range s {
				s[i] = samples[(off+i)*ch+c]
			}
			f.Subframes = append(f.Subframes, &frame.Subframe{SubHeader: frame.SubHeader{Pred: frame.PredVerbatim}, Samples: s, NSamples: size})
		}
		if err := enc.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
