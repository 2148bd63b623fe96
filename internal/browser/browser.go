// Package browser runs Debian's headless Chromium for the tests that look
// at what a user sees: the PR comment's screenshots and the HTML report.
// Every page is a local file; with Offline the browser can resolve no host
// and reach no proxy, so a page that needed the network shows it.
package browser

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"testing"
	"time"
)

// Bin is the Chromium on this machine, "" when there is none.
func Bin() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// Offline are the flags that cut a page off from every network: no host
// resolves, and every connection goes to a proxy that is not there.
var Offline = []string{"--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>"}

// Run runs headless Chromium on the file page with args and returns its
// standard output and error; it skips the test where there is no Chromium
// (.ci/run installs Debian's) and fails it when Chromium fails.
func Run(t *testing.T, page string, args ...string) (stdout, stderr []byte) {
	t.Helper()
	bin := Bin()
	if bin == "" {
		t.Skip("no chromium (.ci/run installs Debian's)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--allow-file-access-from-files",
		"--user-data-dir=" + t.TempDir(), "--virtual-time-budget=20000"}
	cmd := exec.CommandContext(ctx, bin, append(append(base, args...), "file://"+page)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, errb.String())
	}
	return out.Bytes(), errb.Bytes()
}

// Ink is the share of a PNG screenshot's pixels (every other row and
// column) that are not near white: a blank page has none.
func Ink(path string) (float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		return 0, err
	}
	b := img.Bounds()
	ink, all := 0, 0
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			all++
			if r, g, bl, _ := img.At(x, y).RGBA(); r < 0xe000 || g < 0xe000 || bl < 0xe000 {
				ink++
			}
		}
	}
	if all == 0 {
		return 0, nil
	}
	return float64(ink) / float64(all), nil
}
