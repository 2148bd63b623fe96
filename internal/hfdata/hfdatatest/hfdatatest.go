// Package hfdatatest puts stand-ins of AIPerf's public datasets on a
// hubtest hub: each with the repository layout, dataset card and columns
// the real one has, and a few rows.
package hfdatatest

import (
	"bytes"
	"image"
	"image/png"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/aiperf-action/aiperf-action/internal/hfdata"
	"github.com/aiperf-action/aiperf-action/internal/hub/hubtest"
)

// Parquet writes rows as the hub's datasets hold them (pyarrow's nested
// LIST and struct columns), for tests that need a dataset's file.
func Parquet[T any](t testing.TB, rows []T) []byte {
	t.Helper()
	var b bytes.Buffer
	w := parquet.NewGenericWriter[T](&b)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// HubImage is an image cell as the hub stores one.
type HubImage struct {
	Bytes []byte `parquet:"bytes"`
	Path  string `parquet:"path"`
}

// MMStarRow is a row of Lin-Chen/MMStar.
type MMStarRow struct {
	Index    int64    `parquet:"index"`
	Question string   `parquet:"question"`
	Image    HubImage `parquet:"image"`
	Answer   string   `parquet:"answer"`
}

// GSMRow is a row of openai/gsm8k.
type GSMRow struct {
	Question string `parquet:"question"`
	Answer   string `parquet:"answer"`
}

// BlazeRow is a row of vdaita/edit_5k_char.
type BlazeRow struct {
	Code          string `parquet:"code"`
	ChangeRequest string `parquet:"change_request"`
}

// PNG is a small PNG image.
func PNG(t testing.TB) []byte {
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewRGBA(image.Rect(0, 0, 4, 4))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// GSM8KReadme is the shape of openai/gsm8k's dataset card: two configs,
// each naming its splits' files.
const GSM8KReadme = `---
language:
- en
configs:
- config_name: main
  data_files:
  - split: train
    path: main/train-*
  - split: test
    path: main/test-*
- config_name: socratic
  data_files:
  - split: train
    path: socratic/train-*
  - split: test
    path: socratic/test-*
---
# GSM8K
`

// LibriSpeechReadme is the shape of openslr/librispeech_asr's card: a
// config a folder, splits named with dots.
const LibriSpeechReadme = `---
configs:
- config_name: clean
  data_files:
  - split: test
    path: clean/test/*
  - split: train.100
    path: clean/train.100/*
- config_name: other
  data_files:
  - split: test
    path: other/test/*
---
# LibriSpeech
`

// AddPublic puts a stand-in of each named public dataset on a hub, with
// the repository layout, card and columns the real one has (a few rows).
func AddPublic(t testing.TB, h *hubtest.Hub, names ...string) {
	t.Helper()
	img := PNG(t)
	for _, n := range names {
		var files map[string]hubtest.File
		switch n {
		case "spec_al_gsm8k":
			files = map[string]hubtest.File{"README.md": {Data: []byte(GSM8KReadme)},
				"main/test-00000-of-00001.parquet":     {Data: Parquet(t, []GSMRow{{"Janet has 3 apples. How many?", "#### 3"}, {"", "#### 0"}, {"A train leaves at 5. When?", "#### 5"}})},
				"main/train-00000-of-00001.parquet":    {Data: Parquet(t, []GSMRow{{"train question", "#### 1"}})},
				"socratic/test-00000-of-00001.parquet": {Data: Parquet(t, []GSMRow{{"socratic question?", "#### 2"}})}}
		case "spec_al_mtbench":
			files = map[string]hubtest.File{"raw/question.jsonl": {Data: []byte(`{"prompt": ["Write a haiku.", "Now make it rhyme."], "category": "writing"}` + "\n" + `{"prompt": ["Explain TCP."], "category": "stem"}` + "\n")},
				"data/train-00000-of-00001.jsonl": {Data: []byte(`{"prompt": ["Write a haiku.", "Now make it rhyme."], "category": "writing"}` + "\n" + `{"prompt": ["Explain TCP."], "category": "stem"}` + "\n")}}
		case "mmstar":
			files = map[string]hubtest.File{"README.md": {Data: []byte("---\nconfigs:\n- config_name: val\n  data_files:\n  - split: val\n    path: mmstar.parquet\n---\n")},
				"mmstar.parquet": {Data: Parquet(t, []MMStarRow{{0, "What colour is it?", HubImage{img, "0.png"}, "A"}, {1, "How many?", HubImage{img, "1.png"}, "B"}})}}
		case "blazedit_5k", "aimo":
			rows := []BlazeRow{{"def f(): pass", "Rename f to g."}, {"x = 1", "Make x a constant."}}
			files = map[string]hubtest.File{"data/train-00000-of-00001.parquet": {Data: Parquet(t, rows)}}
			if n == "aimo" {
				files = map[string]hubtest.File{"data/train-00000-of-00001.parquet": {Data: Parquet(t, []struct {
					Problem string `parquet:"problem"`
				}{{"Find x if 2x = 6."}, {"What is 7 * 6?"}, {"Prove 1 + 1 = 2."}})},
					"data/test-00000-of-00001.parquet": {Data: Parquet(t, []struct {
						Problem string `parquet:"problem"`
					}{{"a test problem"}})}}
			}
		case "vision_arena":
			type msg struct {
				Content string `parquet:"content"`
				Role    string `parquet:"role"`
			}
			type row struct {
				Conversation [][]msg    `parquet:"conversation,list"`
				Images       []HubImage `parquet:"images,list"`
			}
			files = map[string]hubtest.File{"data/train-00000-of-00001.parquet": {Data: Parquet(t, []row{
				{[][]msg{{{"What is in this picture?", "user"}}, {{"A cat.", "assistant"}}}, []HubImage{{img, "a.png"}}},
				{[][]msg{{{"Read the sign.", "user"}}}, []HubImage{{img, "b.png"}}},
			})}}
		case "llava_onevision":
			type msg struct {
				From  string `parquet:"from"`
				Value string `parquet:"value"`
			}
			type row struct {
				ID            string   `parquet:"id"`
				Conversations []msg    `parquet:"conversations,list"`
				Image         HubImage `parquet:"image"`
			}
			rows := []row{{"1", []msg{{"human", "<image>\nDescribe the chart."}, {"gpt", "It rises."}}, HubImage{img, "c.png"}}}
			files = map[string]hubtest.File{"sharegpt4o/train-00000-of-00001.parquet": {Data: Parquet(t, rows)},
				"other/train-00000-of-00001.parquet": {Data: Parquet(t, []row{{"2", []msg{{"human", "not this subset"}}, HubImage{img, "d.png"}}})}}
		case "librispeech":
			// The repository as it is since its parquet conversion: a
			// folder a config, named in the card.
			rows := []SpeechRow{
				{"a.flac", HubAudio{FLAC(t, Tone(1.5, 16000, 16, 1), 16000, 16, 1), "a.flac"}, "A TONE", 1, "1-1-0001"},
				{"b.flac", HubAudio{FLAC(t, Tone(31, 16000, 16, 1), 16000, 16, 1), "b.flac"}, "TOO LONG", 1, "1-1-0002"},
				{"c.flac", HubAudio{FLAC(t, Tone(0.5, 22050, 24, 2), 22050, 24, 2), "c.flac"}, "DEEP STEREO", 2, "2-1-0001"},
				{"d.ogg", HubAudio{[]byte("OggS not a clip this tool reads"), "d.ogg"}, "OGG", 3, "3-1-0001"},
			}
			files = map[string]hubtest.File{"README.md": {Data: []byte(LibriSpeechReadme)},
				"clean/test/0000.parquet":      {Data: Parquet(t, rows)},
				"clean/train.100/0000.parquet": {Data: Parquet(t, rows[:1])},
				"other/test/0000.parquet":      {Data: Parquet(t, rows[2:3])}}
		case "mmvu":
			type choices struct {
				A string `parquet:"A"`
				B string `parquet:"B"`
				C string `parquet:"C"`
				D string `parquet:"D"`
				E string `parquet:"E"`
			}
			type row struct {
				ID       string  `parquet:"id"`
				Question string  `parquet:"question"`
				Choices  choices `parquet:"choices"`
				Video    string  `parquet:"video"`
			}
			rows := []row{{"1", "What moves first?", choices{"The ball", "The cup", "Nothing", "", ""}, "http://127.0.0.1:9/mmvu/1.mp4"},
				{"2", "Name the process shown.", choices{}, "http://127.0.0.1:9/mmvu/2.mp4"}}
			files = map[string]hubtest.File{"validation.parquet": {Data: Parquet(t, rows)}}
		default:
			t.Fatalf("no stand-in for %s", n)
		}
		h.Add("dataset", hfdata.Catalog[n].Repo, "main", files)
	}
}
