package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// startCustomAPI stands in for the servers of AIPerf's template-endpoint
// tutorial: APIs no endpoint type knows, each with the body its tutorial
// posts. Each checks the body's fields and their JSON types strictly and
// answers 400 otherwise, so a template rendered wrong fails its command.
//
// It returns its URL and, by path, how many requests it answered 200.
func startCustomAPI(t *testing.T) (string, func(path string) int64) {
	t.Helper()
	var mu sync.Mutex
	ok := map[string]int64{}
	mux := http.NewServeMux()
	decode := func(w http.ResponseWriter, r *http.Request, want map[string]string) map[string]any {
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, "not a JSON object: "+err.Error(), http.StatusBadRequest)
			return nil
		}
		for k, typ := range want {
			v, ok := body[k]
			good := ok
			switch typ {
			case "string":
				s, isStr := v.(string)
				good = isStr && s != ""
			case "strings":
				xs, isList := v.([]any)
				good = isList && len(xs) > 0
				for _, x := range xs {
					if s, ok := x.(string); !ok || s == "" {
						good = false
					}
				}
			case "bool":
				_, good = v.(bool)
			case "number":
				_, good = v.(float64)
			}
			if !good {
				http.Error(w, fmt.Sprintf("field %q: want a %s, got %v", k, typ, v), http.StatusBadRequest)
				return nil
			}
		}
		return body
	}
	reply := func(w http.ResponseWriter, v any) {
		mu.Lock()
		ok[w.Header().Get("X-Path")]++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("POST /custom-endpoint", func(w http.ResponseWriter, r *http.Request) {
		if decode(w, r, map[string]string{"text": "string"}) != nil {
			reply(w, map[string]any{"text": "a custom API's answer"})
		}
	})
	embed := func(field string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			want := map[string]string{field: "strings"}
			if field == "input" {
				want["model"] = "string"
			}
			if b := decode(w, r, want); b != nil {
				var out [][]float64
				for range b[field].([]any) {
					out = append(out, []float64{0.1, 0.2, 0.3})
				}
				reply(w, map[string]any{"embeddings": out})
			}
		}
	}
	mux.HandleFunc("POST /embed", embed("input"))
	mux.HandleFunc("POST /embeddings", embed("text"))
	mux.HandleFunc("POST /generate", func(w http.ResponseWriter, r *http.Request) {
		b := decode(w, r, map[string]string{"model": "string", "prompt": "string", "max_new_tokens": "number", "stream": "bool"})
		if b == nil {
			return
		}
		words := strings.Fields(strings.Repeat("token ", int(b["max_new_tokens"].(float64))))
		if b["stream"] != true {
			reply(w, map[string]any{"generated_text": strings.Join(words, " ")})
			return
		}
		mu.Lock()
		ok["/generate"]++
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		for _, wd := range words {
			e, _ := json.Marshal(map[string]string{"generated_text": wd + " "})
			fmt.Fprintf(w, "data: %s\n\n", e)
			w.(http.Flusher).Flush()
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	})
	mux.HandleFunc("POST /analyze", func(w http.ResponseWriter, r *http.Request) {
		if decode(w, r, map[string]string{"text": "string", "image": "string"}) != nil {
			reply(w, map[string]any{"text": "an image's description"})
		}
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Path", r.URL.Path)
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func(path string) int64 {
		mu.Lock()
		defer mu.Unlock()
		return ok[path]
	}
}
