package hfdata

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"regexp"
	"strings"

	"github.com/parquet-go/parquet-go"
	"gopkg.in/yaml.v3"
)

// dataExt are the file kinds read as rows.
var dataExt = []string{".parquet", ".jsonl", ".json", ".csv"}

func isData(f string) bool {
	for _, e := range dataExt {
		if strings.HasSuffix(strings.ToLower(f), e) {
			return true
		}
	}
	return false
}

// splitWords are the names the datasets library reads as each split in
// file and folder names, when a README declares no data files.
var splitWords = map[string][]string{
	"train":      {"train", "training"},
	"validation": {"validation", "valid", "val", "dev"},
	"val":        {"validation", "valid", "val", "dev"},
	"test":       {"test", "testing", "eval", "evaluation"},
}

// DataFiles are the files of a dataset's subset (config; "" the default)
// and split, as load_dataset picks them: the README's configs' data_files
// when it declares them, else files whose path names the split (a folder
// or a file name starting with it), else, for train, every data file.
func DataFiles(files []string, readme []byte, subset, split string) ([]string, error) {
	if pats, ok, err := readmeFiles(readme, subset, split); err != nil {
		return nil, err
	} else if ok {
		var out []string
		for _, f := range files {
			for _, p := range pats {
				if globMatch(p, f) {
					out = append(out, f)
					break
				}
			}
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("the README's data_files for subset %q split %q (%s) match no file", orDefault(subset), split, strings.Join(pats, ", "))
		}
		return out, nil
	}
	var data []string
	for _, f := range files {
		if isData(f) && (subset == "" || strings.HasPrefix(f, subset+"/")) {
			data = append(data, f)
		}
	}
	words := splitWords[split]
	if words == nil {
		words = []string{split}
	}
	var out []string
	for _, f := range data {
		if namesSplit(f, words) {
			out = append(out, f)
		}
	}
	if len(out) == 0 && split == "train" {
		out = data // no split in any name: every file is train, as load_dataset reads them
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no data file of subset %q names split %q (its files: %s)", orDefault(subset), split, strings.Join(data, ", "))
	}
	return out, nil
}

func orDefault(s string) string {
	if s == "" {
		return "default"
	}
	return s
}

// namesSplit reports whether a folder of f, or its file name's start,
// is one of words (followed by a separator, a digit or the extension).
func namesSplit(f string, words []string) bool {
	for _, seg := range strings.Split(strings.ToLower(f), "/") {
		for _, w := range words {
			if seg == w {
				return true
			}
			if rest, ok := strings.CutPrefix(seg, w); ok && rest != "" && strings.ContainsRune("-._ 0123456789", rune(rest[0])) {
				return true
			}
		}
	}
	return false
}

// readmeFiles reads a dataset card's YAML front matter for the data
// files of subset and split: configs[].data_files as a pattern, a list
// of them, or a list of {split, path}.
func readmeFiles(readme []byte, subset, split string) ([]string, bool, error) {
	rest, ok := bytes.CutPrefix(bytes.TrimLeft(readme, "\ufeff"), []byte("---\n"))
	if !ok {
		return nil, false, nil
	}
	front, _, ok := bytes.Cut(rest, []byte("\n---"))
	if !ok {
		return nil, false, nil
	}
	var card struct {
		Configs []struct {
			Name      string    `yaml:"config_name"`
			Default   bool      `yaml:"default"`
			DataFiles yaml.Node `yaml:"data_files"`
		} `yaml:"configs"`
	}
	if err := yaml.Unmarshal(front, &card); err != nil {
		return nil, false, fmt.Errorf("README.md's YAML: %v", err)
	}
	if len(card.Configs) == 0 {
		return nil, false, nil
	}
	var names []string
	for i, c := range card.Configs {
		names = append(names, c.Name)
		if subset == c.Name || subset == "" && (c.Default || c.Name == "default" || i == 0 && len(card.Configs) == 1) {
			return patternsOf(&c.DataFiles, split)
		}
	}
	return nil, false, fmt.Errorf("no subset %q: the README's configs are %s (--hf-subset)", orDefault(subset), strings.Join(names, ", "))
}

func patternsOf(n *yaml.Node, split string) ([]string, bool, error) {
	strs := func(n *yaml.Node) []string {
		if n.Kind == yaml.ScalarNode {
			return []string{n.Value}
		}
		var out []string
		for _, c := range n.Content {
			if c.Kind == yaml.ScalarNode {
				out = append(out, c.Value)
			}
		}
		return out
	}
	switch n.Kind {
	case yaml.ScalarNode:
		if split == "train" {
			return []string{n.Value}, true, nil
		}
	case yaml.SequenceNode:
		var splits []string
		for _, item := range n.Content {
			if item.Kind == yaml.ScalarNode {
				if split == "train" {
					return strs(n), true, nil
				}
				break
			}
			var e struct {
				Split string    `yaml:"split"`
				Path  yaml.Node `yaml:"path"`
			}
			if err := item.Decode(&e); err != nil {
				return nil, false, fmt.Errorf("README.md's data_files: %v", err)
			}
			splits = append(splits, e.Split)
			if e.Split == split {
				return strs(&e.Path), true, nil
			}
		}
		return nil, false, fmt.Errorf("no split %q: the README's data_files have %s", split, strings.Join(splits, ", "))
	}
	return nil, false, fmt.Errorf("no split %q in the README's data_files", split)
}

// globMatch matches an fsspec pattern: * and ? within a path segment,
// ** across them.
func globMatch(pattern, name string) bool {
	var re strings.Builder
	re.WriteString("^")
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; c {
		case '*':
			if i+1 < len(pattern) && pattern[i+1] == '*' {
				re.WriteString(".*")
				i++
				if i+1 < len(pattern) && pattern[i+1] == '/' {
					re.WriteString("/?")
					i++
				}
			} else {
				re.WriteString("[^/]*")
			}
		case '?':
			re.WriteString("[^/]")
		default:
			re.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	re.WriteString("$")
	ok, _ := regexp.MatchString(re.String(), name)
	return ok
}

// Rows calls each for every row of a data file, in order.
func Rows(file string, each func(map[string]any) error) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	switch lower := strings.ToLower(file); {
	case strings.HasSuffix(lower, ".parquet"):
		st, err := f.Stat()
		if err != nil {
			return err
		}
		pf, err := parquet.OpenFile(f, st.Size())
		if err != nil {
			return fmt.Errorf("%s: %v", path.Base(file), err)
		}
		r := parquet.NewReader(pf)
		defer r.Close()
		for n := int64(0); n < pf.NumRows(); n++ {
			row := map[string]any{}
			if err := r.Read(&row); err != nil {
				if err == io.EOF {
					break
				}
				return fmt.Errorf("%s row %d: %v", path.Base(file), n+1, err)
			}
			if err := each(row); err != nil {
				return err
			}
		}
		return nil
	case strings.HasSuffix(lower, ".csv"):
		cr := csv.NewReader(bufio.NewReader(f))
		head, err := cr.Read()
		if err != nil {
			return fmt.Errorf("%s: %v", path.Base(file), err)
		}
		for line := 2; ; line++ {
			rec, err := cr.Read()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return fmt.Errorf("%s: %v", path.Base(file), err)
			}
			row := map[string]any{}
			for i, h := range head {
				if i < len(rec) {
					row[h] = rec[i]
				}
			}
			if err := each(row); err != nil {
				return err
			}
		}
	}
	// JSON: JSON Lines, or one array of rows, or {"data": [...]}.
	br := bufio.NewReader(f)
	first, err := br.Peek(1)
	for err == nil && (first[0] == ' ' || first[0] == '\n' || first[0] == '\r' || first[0] == '\t') {
		br.ReadByte()
		first, err = br.Peek(1)
	}
	if err != nil {
		return nil // empty
	}
	d := json.NewDecoder(br)
	if first[0] == '[' {
		var rows []map[string]any
		if err := d.Decode(&rows); err != nil {
			return fmt.Errorf("%s: %v", path.Base(file), err)
		}
		for _, r := range rows {
			if err := each(r); err != nil {
				return err
			}
		}
		return nil
	}
	for n := 1; ; n++ {
		var row map[string]any
		if err := d.Decode(&row); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("%s row %d: %v", path.Base(file), n, err)
		}
		if data, ok := row["data"].([]any); ok && n == 1 && len(row) == 1 {
			for _, x := range data {
				if m, ok := x.(map[string]any); ok {
					if err := each(m); err != nil {
						return err
					}
				}
			}
			continue
		}
		if err := each(row); err != nil {
			return err
		}
	}
}
