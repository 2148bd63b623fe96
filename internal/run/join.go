package run

import (
	crand "crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"

	"github.com/aiperf-action/aiperf-action/internal/controller"
	"github.com/aiperf-action/aiperf-action/internal/wire"
)

// joinOptions are the token and the notice of a run whose workers join
// from other hosts (--worker-listen): the user's token from the
// environment, else one drawn here and printed (the workers need it); a
// token the user gave is never printed.
func joinOptions(listen string, workers int, stderr io.Writer) (string, func(addr string)) {
	token := os.Getenv(controller.TokenEnv)
	given := token != ""
	if listen != "" && !given {
		var b [16]byte
		crand.Read(b[:])
		token = hex.EncodeToString(b[:])
	}
	return token, func(addr string) {
		tok := "$" + controller.TokenEnv
		if !given {
			tok = token
		}
		fmt.Fprintf(stderr, "aiperf-action: waiting up to %s for %d workers to join %s; on each host: %s=%s aiperf-action worker --join %s --index I --of %d (I from 0 to %d)\n",
			wire.JoinLimit, workers, addr, controller.TokenEnv, tok, addr, workers, workers-1)
	}
}
