package boringssl

import (
	"context"
	"io"
	"os"
	"testing"

	"github.com/migaudit/migaudit/harnesses/run/runtest"
)

// TestBuildDefault builds BoringSSL at DefaultCommit from the mirror and
// checks the headers and both libraries are where the harnesses look.
func TestBuildDefault(t *testing.T) {
	b := runtest.Built(t, "google/boringssl mirror", func(log io.Writer) (Built, error) {
		return Ensure(context.Background(), "", log)
	})
	for _, p := range []string{b.Include() + "/openssl/ssl.h", b.SSL(), b.Crypto()} {
		if st, err := os.Stat(p); err != nil || st.Size() == 0 {
			t.Errorf("%s: missing or empty (%v)", p, err)
		}
	}
	t.Logf("boringssl %s built in %s (%s)", b.Commit, b.Duration, b.Dir)
}

func TestSource(t *testing.T) {
	for _, c := range []struct{ dep, dir, commit string }{
		{"", "", DefaultCommit},
		{"/src/boringssl", "/src/boringssl", DefaultCommit},
		{"/src/boringssl@abc123", "/src/boringssl", "abc123"},
	} {
		s := Source(c.dep)
		if s.Dir != c.dir || s.Commit != c.commit || !s.Dep || s.Upstream != Upstream {
			t.Errorf("Source(%q) = %+v, want dir %q commit %q", c.dep, s, c.dir, c.commit)
		}
	}
}
