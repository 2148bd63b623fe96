// Command testmodel writes the tiny random-weight llama GGUF that CI serves
// with llama-server: testmodel -o model.gguf [-size small|medium] [-seed N].
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/aiperf-action/aiperf-action/internal/testmodel"
)

func main() {
	out := flag.String("o", "model.gguf", "output file")
	size := flag.String("size", "small", "small (dim 256, 4 layers) or medium (dim 768, 8 layers, GQA 12/4)")
	seed := flag.Uint64("seed", 1, "weight seed")
	flag.Parse()
	cfg := testmodel.Small
	switch *size {
	case "small":
	case "medium":
		cfg = testmodel.Medium
	default:
		fmt.Fprintf(os.Stderr, "testmodel: -size %q: want small or medium\n", *size)
		os.Exit(2)
	}
	cfg.Seed = *seed
	if err := testmodel.Write(*out, cfg); err != nil {
		fmt.Fprintf(os.Stderr, "testmodel: %v\n", err)
		os.Exit(2)
	}
}
