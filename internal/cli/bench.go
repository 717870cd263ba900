package cli

import (
	"io"

	"github.com/askpoint/askpoint/internal/bench"
)

// benchCmd is `askpoint bench`: the side-by-side benchmark of the a2a-go
// SDK's default server and askpoint (see internal/bench). It starts its
// servers by running this binary as `askpoint bench server ...` (hidden).
func benchCmd(args []string, stdout, stderr io.Writer) int {
	return bench.Main(args, stdout, stderr)
}
