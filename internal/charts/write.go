package charts

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"

	"gonum.org/v1/plot/vg"

	"github.com/aiperf-action/aiperf-action/internal/result"
)

// Size of every chart.
var (
	Width  = 9 * vg.Inch
	Height = 4 * vg.Inch
)

// Formats a chart is written in.
var Formats = []string{"png", "svg"}

// Write writes c as dir/<name>.<format> (png or svg), atomically, and
// returns the path.
func Write(c Chart, dir, format string) (string, error) {
	wt, err := c.Plot.WriterTo(Width, Height, format)
	if err != nil {
		return "", fmt.Errorf("%s: %v", c.Name, err)
	}
	path := filepath.Join(dir, c.Name+"."+format)
	return path, result.WriteAtomicFunc(path, func(w io.Writer) error {
		_, err := wt.WriteTo(w)
		return err
	})
}

// SVG is c as an inline <svg> element, without its XML prelude, for an
// HTML page.
func SVG(c Chart) ([]byte, error) {
	wt, err := c.Plot.WriterTo(Width, Height, "svg")
	if err != nil {
		return nil, fmt.Errorf("%s: %v", c.Name, err)
	}
	var b bytes.Buffer
	if _, err := wt.WriteTo(&b); err != nil {
		return nil, fmt.Errorf("%s: %v", c.Name, err)
	}
	out := b.Bytes()
	if i := bytes.Index(out, []byte("<svg")); i >= 0 {
		out = out[i:]
	}
	return out, nil
}
