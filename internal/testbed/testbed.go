// Package testbed says what machine and stack a run was measured on: its
// fingerprint (OS, CPU, GPUs, driver, CUDA, the server's version, the
// tool's), recorded in run.json, and the testbed key that baselines are
// kept apart by, so that a matrix over GPUs never mixes its GPUs' runs.
//
// The key holds what must match for two runs to be compared (OS and
// architecture, GPU model and count, driver); the rest of the fingerprint
// is compared when the gate judges, and a difference is reported as an
// environment change, not as the pull request's regression. The server's
// version is in the fingerprint, not the key: a pull request that builds
// the server changes it, and that is what the gate is there to judge.
package testbed

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Environment is run.json's environment: what the run was measured on.
type Environment struct {
	Testbed       string `json:"testbed"` // the key baselines are kept apart by
	OS            string `json:"os"`
	Arch          string `json:"arch"`
	CPUs          int    `json:"cpus"`
	CPUModel      string `json:"cpu_model,omitempty"`
	Kernel        string `json:"kernel,omitempty"`
	GPUs          []GPU  `json:"gpus,omitempty"`
	CUDA          string `json:"cuda,omitempty"`
	ServerVersion string `json:"server_version,omitempty"` // what the server's /version (or /info) says
	ServerImage   string `json:"server_image,omitempty"`   // AIPERF_SERVER_IMAGE, where the workflow names the image it runs
	Tool          string `json:"tool,omitempty"`           // aiperf-action's version
}

// GPU is one GPU as nvidia-smi names it.
type GPU struct {
	Name     string `json:"name"`
	Driver   string `json:"driver"`
	MemoryMB int    `json:"memory_mb,omitempty"`
}

// Options are where Detect looks.
type Options struct {
	ServerURL string // asked for its version ("": not asked)
	Tool      string // this binary's version
	Testbed   string // a configured key ("": derived)
	Getenv    func(string) string
	NvidiaSMI string        // the nvidia-smi to run (default: from PATH)
	Timeout   time.Duration // for each probe (default 5s)
	HTTP      *http.Client
}

// Detect fingerprints this machine and the server. A probe that fails
// leaves its field empty: nothing here stops a run.
func Detect(ctx context.Context, o Options) *Environment {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Second
	}
	e := &Environment{OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU(), Tool: o.Tool,
		CPUModel: cpuModel(), Kernel: kernel(), ServerImage: clean(o.Getenv("AIPERF_SERVER_IMAGE"), 200)}
	e.GPUs, e.CUDA = gpus(ctx, o)
	if o.ServerURL != "" {
		e.ServerVersion = serverVersion(ctx, o)
	}
	e.Testbed = o.Testbed
	if e.Testbed == "" {
		e.Testbed = e.Key()
	}
	return e
}

var keyUnsafe = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// Key is the testbed key derived from the fingerprint: "linux-amd64-cpu",
// or "linux-amd64-2xNVIDIA_H100_80GB_HBM3-550.54.15".
func (e *Environment) Key() string {
	k := e.OS + "-" + e.Arch
	if len(e.GPUs) == 0 {
		return k + "-cpu"
	}
	// Counted by model: "2xA100+1xT4" for a mixed machine.
	count := map[string]int{}
	var names []string
	for _, g := range e.GPUs {
		if count[g.Name] == 0 {
			names = append(names, g.Name)
		}
		count[g.Name]++
	}
	sort.Strings(names)
	var parts []string
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%dx%s", count[n], n))
	}
	return Safe(k + "-" + strings.Join(parts, "+") + "-" + e.GPUs[0].Driver)
}

// Safe makes a testbed key safe as a folder name.
func Safe(key string) string {
	s := strings.Trim(keyUnsafe.ReplaceAllString(strings.TrimSpace(key), "_"), "._")
	if len(s) > 100 {
		s = s[:100]
	}
	return s
}

// A Change is one fingerprint field that differs between the baseline's
// runs and the candidate's.
type Change struct{ Field, Baseline, Candidate string }

func (c Change) String() string {
	return fmt.Sprintf("%s %s → %s", c.Field, orNone(c.Baseline), orNone(c.Candidate))
}

func orNone(s string) string {
	if s == "" {
		return "(unknown)"
	}
	return s
}

// Hardware reports whether the change is of the machine or its drivers
// (what makes a slower run no evidence against the pull request), not of
// the server or the tool.
func (c Change) Hardware() bool {
	switch c.Field {
	case "server version", "server image", "tool":
		return false
	}
	return true
}

// Diff lists the fields that differ from base to cand; a field unknown on
// either side (an older run.json) is not a difference.
func Diff(base, cand *Environment) []Change {
	if base == nil || cand == nil {
		return nil
	}
	var out []Change
	add := func(field, b, c string) {
		if b != "" && c != "" && b != c {
			out = append(out, Change{field, b, c})
		}
	}
	add("os", base.OS+"/"+base.Arch, cand.OS+"/"+cand.Arch)
	if base.CPUs > 0 && cand.CPUs > 0 {
		add("cpus", strconv.Itoa(base.CPUs), strconv.Itoa(cand.CPUs))
	}
	add("cpu", base.CPUModel, cand.CPUModel)
	add("gpus", gpuList(base.GPUs), gpuList(cand.GPUs))
	add("driver", driver(base.GPUs), driver(cand.GPUs))
	add("cuda", base.CUDA, cand.CUDA)
	add("server version", base.ServerVersion, cand.ServerVersion)
	add("server image", base.ServerImage, cand.ServerImage)
	add("tool", base.Tool, cand.Tool)
	return out
}

func gpuList(gs []GPU) string {
	if len(gs) == 0 {
		return "none"
	}
	var names []string
	for _, g := range gs {
		names = append(names, g.Name)
	}
	return strings.Join(names, ", ")
}

func driver(gs []GPU) string {
	if len(gs) == 0 {
		return ""
	}
	return gs[0].Driver
}

func clean(s string, n int) string {
	s = strings.TrimSpace(strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s))
	if len(s) > n {
		s = s[:n]
	}
	return s
}

// cpuModel is /proc/cpuinfo's first "model name" (Linux only).
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, 1<<20))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return clean(v, 120)
		}
	}
	return ""
}

func kernel() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return ""
	}
	return clean(string(b), 100)
}

var cudaVersion = regexp.MustCompile(`CUDA Version:\s*([0-9][0-9.]*)`)

// gpus asks nvidia-smi for the GPUs (name, driver, memory), and its
// banner for the CUDA version; none where there is no nvidia-smi.
func gpus(ctx context.Context, o Options) ([]GPU, string) {
	bin := o.NvidiaSMI
	if bin == "" {
		p, err := exec.LookPath("nvidia-smi")
		if err != nil {
			return nil, ""
		}
		bin = p
	}
	run := func(args ...string) []byte {
		c, cancel := context.WithTimeout(ctx, o.Timeout)
		defer cancel()
		out, err := exec.CommandContext(c, bin, args...).Output()
		if err != nil {
			return nil
		}
		return out
	}
	var gs []GPU
	for _, line := range strings.Split(string(run("--query-gpu=name,driver_version,memory.total", "--format=csv,noheader,nounits")), "\n") {
		f := strings.Split(line, ",")
		if len(f) < 2 || strings.TrimSpace(f[0]) == "" {
			continue
		}
		g := GPU{Name: clean(f[0], 80), Driver: clean(f[1], 40)}
		if len(f) > 2 {
			g.MemoryMB, _ = strconv.Atoi(strings.TrimSpace(f[2]))
		}
		if len(gs) < 64 {
			gs = append(gs, g)
		}
	}
	cuda := ""
	if m := cudaVersion.FindSubmatch(run()); m != nil {
		cuda = string(m[1])
	}
	return gs, cuda
}

// serverVersion is what the server says of its version: vLLM's and
// SGLang's /version ({"version": ...}), else TGI's /info ({"version": ...,
// "sha": ...}), else llama.cpp's /props (build_info); "" when none answers.
func serverVersion(ctx context.Context, o Options) string {
	hc := o.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: o.Timeout}
	}
	base := strings.TrimSuffix(strings.TrimSuffix(o.ServerURL, "/"), "/v1")
	for _, p := range []struct{ path, field string }{{"/version", "version"}, {"/info", "version"}, {"/props", "build_info"}} {
		c, cancel := context.WithTimeout(ctx, o.Timeout)
		req, err := http.NewRequestWithContext(c, http.MethodGet, base+p.path, nil)
		if err != nil {
			cancel()
			return ""
		}
		resp, err := hc.Do(req)
		if err != nil {
			cancel()
			continue
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
		cancel()
		if resp.StatusCode != http.StatusOK {
			continue
		}
		var m map[string]any
		if json.Unmarshal(bytes.TrimSpace(b), &m) != nil {
			continue
		}
		if v, ok := m[p.field].(string); ok && v != "" {
			if sha, ok := m["sha"].(string); ok && sha != "" {
				v += " (" + sha[:min(len(sha), 12)] + ")"
			}
			return clean(v, 100)
		}
	}
	return ""
}
