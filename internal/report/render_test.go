package report

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aiperf-action/aiperf-action/internal/browser"
)

var updateShots = flag.Bool("screenshots", false, "write the rendered comments to docs/screenshots")

// renderModules is where tools/render's npm packages are installed
// (npm ci --prefix tools/render): marked for GitHub-flavoured markdown,
// mermaid for the charts, both run inside the browser.
const renderModules = "../../tools/render/node_modules"

// commentPage is an HTML page that renders markdown as a PR comment: GFM
// by marked, mermaid blocks by mermaid, every <details> open so that the
// charts show; it marks <body data-rendered> when done.
func commentPage(markdown string) string { return page(markdown, true) }

// phonePage is the comment as a phone shows it, 390 px wide: the details
// closed, as GitHub leaves them, and the tables as narrow as they go.
func phonePage(markdown string) string { return page(markdown, false) }

func page(markdown string, wide bool) string {
	css := `body { max-width: 860px; margin: 16px; } th, td { padding: 4px 10px; }`
	if wide {
		markdown = strings.ReplaceAll(markdown, "<details>", "<details open>")
	} else {
		css = `body { margin: 8px; } th, td { padding: 2px 4px; } table { font-size: 13px; }`
	}
	md, _ := json.Marshal(markdown)
	abs, _ := filepath.Abs(renderModules)
	return `<!doctype html><html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<style>
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; font-size: 14px; line-height: 1.5; color: #1f2328; }
table { border-collapse: collapse; margin: 8px 0; } th, td { border: 1px solid #d1d9e0; } th { background: #f6f8fa; }
pre { white-space: pre-wrap; word-break: break-all; background: #f6f8fa; padding: 8px; }
` + css + `
code { background: #eff1f3; padding: 1px 4px; border-radius: 4px; } h2 { border-bottom: 1px solid #d1d9e0; }
summary { cursor: pointer; font-weight: 600; }
</style>
<script src="file://` + abs + `/marked/lib/marked.umd.js"></script>
<script src="file://` + abs + `/mermaid/dist/mermaid.min.js"></script>
</head><body><div id="c"></div>
<script>
(async () => {
  const c = document.getElementById("c");
  c.innerHTML = marked.parse(` + string(md) + `, {gfm: true});
  for (const code of c.querySelectorAll("pre code.language-mermaid")) {
    const pre = document.createElement("pre");
    pre.className = "mermaid";
    pre.textContent = code.textContent;
    code.parentElement.replaceWith(pre);
  }
  mermaid.initialize({startOnLoad: false, theme: "default"});
  try { await mermaid.run({querySelector: "pre.mermaid"}); document.body.dataset.rendered = "yes"; }
  catch (e) { document.body.dataset.rendered = "error: " + e; }
})();
</script></body></html>`
}

// chromium runs headless Chromium on page with args (browser.Run).
func chromium(t *testing.T, page string, args ...string) []byte {
	t.Helper()
	out, _ := browser.Run(t, page, args...)
	return out
}

// The five kinds of PR comment (the goldens in testdata) rendered as
// GitHub renders markdown and mermaid, in headless Chromium: each page
// renders without a mermaid error and is not blank, and where there is a
// baseline its percentile chart draws both series, the PR's bars and the
// baseline's line.
func TestCommentsRenderInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("five pages in a browser, ~25 s")
	}
	if _, err := os.Stat(filepath.Join(renderModules, "mermaid", "dist", "mermaid.min.js")); err != nil {
		t.Skip("no mermaid: npm ci --prefix tools/render (.ci/run does)")
	}
	for _, name := range []string{"pass", "fail", "inconclusive", "no-baseline", "error"} {
		t.Run(name, func(t *testing.T) {
			md, err := os.ReadFile(filepath.Join("testdata", "comment-"+name+".md"))
			if err != nil {
				t.Fatal(err)
			}
			page := filepath.Join(t.TempDir(), "comment.html")
			os.WriteFile(page, []byte(commentPage(string(md))), 0o644)
			dom := string(chromium(t, page, "--dump-dom"))
			if !strings.Contains(dom, `data-rendered="yes"`) || strings.Contains(dom, "Syntax error") {
				i := strings.Index(dom, "data-rendered")
				t.Fatalf("not rendered: %s", dom[max(0, i-10):min(len(dom), i+300)])
			}
			if name != "no-baseline" && name != "error" && (!strings.Contains(dom, "bar-plot") || !strings.Contains(dom, "line-plot")) {
				t.Errorf("the percentile chart lacks a series: bars %v, line %v", strings.Contains(dom, "bar-plot"), strings.Contains(dom, "line-plot"))
			}
			shot := filepath.Join(t.TempDir(), "comment.png")
			chromium(t, page, "--screenshot="+shot, "--window-size=900,1700")
			frac, err := browser.Ink(shot)
			if err != nil {
				t.Fatal(err)
			}
			if frac < 0.005 {
				t.Errorf("the page is blank: %.2f%% of it drawn", 100*frac)
			}
			if *updateShots {
				png, _ := os.ReadFile(shot)
				os.MkdirAll(filepath.Join("..", "..", "docs", "screenshots"), 0o755)
				os.WriteFile(filepath.Join("..", "..", "docs", "screenshots", "comment-"+name+".png"), png, 0o644)
				// And as a phone shows it (the README's).
				phone := filepath.Join(t.TempDir(), "phone.html")
				os.WriteFile(phone, []byte(phonePage(string(md))), 0o644)
				shot := filepath.Join(t.TempDir(), "phone.png")
				chromium(t, phone, "--screenshot="+shot, "--window-size=390,1100")
				png, _ = os.ReadFile(shot)
				os.WriteFile(filepath.Join("..", "..", "docs", "screenshots", "phone-"+name+".png"), png, 0o644)
			}
		})
	}
}
