package kube

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// The controller pod serves its results on ResultsPort for `kube run`,
// which reads them through the API server's pod proxy, so the caller
// needs no route into the cluster. ServeResultsEnv holds the address
// and ResultsDirEnv the folder; both are set in the controller's spec.
const (
	ResultsPort     = RecordsPort + 1
	ServeResultsEnv = "AIPERF_ACTION_SERVE_RESULTS"
	ResultsDirEnv   = "AIPERF_ACTION_RESULTS_DIR"
)

// HoldResults is how long a finished controller waits for `kube run` to
// take its results before it exits anyway.
const HoldResults = 15 * time.Minute

// Status is the controller's /status answer.
type Status struct {
	State string `json:"state"` // "running" or "done"
	Exit  int    `json:"exit"`  // the profile's exit code, when done
}

// ServeWhile runs run (the profile) with the results server up on addr:
// /status says whether it is done and its exit code, /stop interrupts the
// run as Ctrl-C would (it writes what it has), /results.tar.gz is dir once
// it is done, and /done lets the process go. Every request must carry the
// run's worker token (?token=). It returns run's exit code after /done,
// or after hold.
func ServeWhile(ctx context.Context, addr, dir, token string, hold time.Duration, stderr io.Writer, run func(context.Context) int) int {
	if token == "" {
		fmt.Fprintf(stderr, "aiperf-action: %s is set but %s is not: the results are served only with the run's token\n", ServeResultsEnv, TokenEnv)
		return 1
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(stderr, "aiperf-action: %s=%s: %v\n", ServeResultsEnv, addr, err)
		return 1
	}
	var (
		mu    sync.Mutex
		st    = Status{State: "running"}
		taken = make(chan struct{})
		once  sync.Once
	)
	authed := func(w http.ResponseWriter, r *http.Request) bool {
		if subtle.ConstantTimeCompare([]byte(r.URL.Query().Get("token")), []byte(token)) != 1 {
			http.Error(w, "the run's token is wanted", http.StatusForbidden)
			return false
		}
		return true
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) {
		if !authed(w, r) {
			return
		}
		mu.Lock()
		s := st
		mu.Unlock()
		json.NewEncoder(w).Encode(s)
	})
	mux.HandleFunc("GET /results.tar.gz", func(w http.ResponseWriter, r *http.Request) {
		if !authed(w, r) {
			return
		}
		mu.Lock()
		done := st.State == "done"
		mu.Unlock()
		if !done {
			http.Error(w, "the run is not done", http.StatusConflict)
			return
		}
		w.Header().Set("Content-Type", "application/gzip")
		if err := writeTarGz(w, dir); err != nil {
			fmt.Fprintf(stderr, "aiperf-action: serving the results: %v\n", err)
		}
	})
	runCtx, interrupt := context.WithCancel(ctx)
	defer interrupt()
	mux.HandleFunc("GET /stop", func(w http.ResponseWriter, r *http.Request) {
		if !authed(w, r) {
			return
		}
		fmt.Fprintln(stderr, "aiperf-action: kube run asked the run to stop; it writes what it has")
		interrupt()
		io.WriteString(w, "stopping\n")
	})
	mux.HandleFunc("GET /done", func(w http.ResponseWriter, r *http.Request) {
		if !authed(w, r) {
			return
		}
		io.WriteString(w, "bye\n")
		once.Do(func() { close(taken) })
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l)
	defer srv.Close()
	code := run(runCtx)
	mu.Lock()
	st = Status{State: "done", Exit: code}
	mu.Unlock()
	fmt.Fprintf(stderr, "aiperf-action: the run is done (exit %d); its results are served on %s until kube run takes them (at most %v)\n", code, l.Addr(), hold)
	select {
	case <-taken:
		time.Sleep(200 * time.Millisecond) // (the /done answer goes out)
	case <-time.After(hold):
		fmt.Fprintf(stderr, "aiperf-action: no one took the results in %v; they are lost with the pod\n", hold)
	case <-ctx.Done():
	}
	return code
}

// writeTarGz writes dir's regular files as a gzipped tar, paths relative.
func writeTarGz(w io.Writer, dir string) error {
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := tw.WriteHeader(&tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, Size: info.Size(), ModTime: info.ModTime(), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err = io.CopyN(tw, f, info.Size())
		return err
	})
	if err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

// maxResults bounds what kube run unpacks (records of a long run at 100k
// streams are large, but not this).
const maxResults = 32 << 30

// ExtractResults unpacks a results archive into dir: regular files only,
// each path inside dir, at most maxResults bytes in all; each file is
// written beside its place and renamed into it.
func ExtractResults(r io.Reader, dir string) (int, error) {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return 0, fmt.Errorf("the results archive: %v", err)
	}
	tr := tar.NewReader(gz)
	var total int64
	n := 0
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("the results archive: %v", err)
		}
		if h.Typeflag != tar.TypeReg {
			return n, fmt.Errorf("the results archive: %q is not a plain file", h.Name)
		}
		clean := filepath.Clean(filepath.FromSlash(h.Name))
		if filepath.IsAbs(clean) || clean == "." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) || clean == ".." {
			return n, fmt.Errorf("the results archive: %q is outside the results folder", h.Name)
		}
		if total += h.Size; h.Size < 0 || total > maxResults {
			return n, errors.New("the results archive is over 32 GiB")
		}
		dst := filepath.Join(dir, clean)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return n, err
		}
		tmp, err := os.CreateTemp(filepath.Dir(dst), ".kube-*")
		if err != nil {
			return n, err
		}
		if _, err := io.CopyN(tmp, tr, h.Size); err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
			return n, fmt.Errorf("the results archive: %s: %v", h.Name, err)
		}
		if err := tmp.Close(); err != nil {
			os.Remove(tmp.Name())
			return n, err
		}
		if err := os.Rename(tmp.Name(), dst); err != nil {
			os.Remove(tmp.Name())
			return n, err
		}
		n++
	}
}
