package picoquic

import (
	"context"
	"io"
	"testing"

	"github.com/migaudit/migaudit/harnesses/run/runtest"
	"github.com/migaudit/migaudit/harnesses/upstream"
)

// TestBuildPinned builds the pinned picoquic with its picotls from the
// mirrors and runs the harness binary's version command.
func TestBuildPinned(t *testing.T) {
	b := runtest.Built(t, "picoquic/picotls mirrors", func(log io.Writer) (*Built, error) {
		return Ensure(context.Background(), upstream.Options{}, log)
	})
	t.Logf("picotls %s from %s", b.Lib.Deps["picotls"], b.PicotlsFrom)
	a := b.Harness
	out := runtest.Version(t, a.Path(Binary), "picoquic ")
	t.Logf("%s: %s", a.Dir, out)
}
