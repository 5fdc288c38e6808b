package quicgo

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/migaudit/migaudit/audit/gitsrc"
	"github.com/migaudit/migaudit/harnesses/upstream"
)

func TestCheckModule(t *testing.T) {
	for _, tc := range []struct {
		name, gomod string
		want        string // "" = accepted
	}{
		{"quic-go", "module github.com/quic-go/quic-go\n\ngo 1.24\n", ""},
		{"another module", "module github.com/lucas-clemente/quic-go\n", "is not quic-go (its go.mod says module github.com/lucas-clemente/quic-go"},
		{"not a module", "", "is not a Go module (no go.mod)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			read := func(p string) ([]byte, error) {
				if tc.gomod == "" {
					return nil, os.ErrNotExist
				}
				return []byte(tc.gomod), nil
			}
			err := CheckModule(read, strings.Repeat("a", 40), "/src/x")
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err = %v, want one line containing %q", err, tc.want)
			}
		})
	}
}

// TestRecipeAtCommits: the pin builds with qlogwriter, v0.54.0 with the
// legacy tracer, and the versions are named like git describe.
func TestRecipeAtCommits(t *testing.T) {
	if os.Getenv("MIGAUDIT_MIRRORS") == "" {
		t.Skip("MIGAUDIT_MIRRORS unset: no quic-go mirror")
	}
	for _, tc := range []struct {
		commit, qlog, describe string
	}{
		{"", "qlog=qlogwriter", "v0.61.0-8-g2cfe6ee0b5ac"},
		{"v0.54.0", "qlog=qlog+logging (before qlogwriter)", "v0.54.0"},
	} {
		t.Run(tc.commit, func(t *testing.T) {
			r, err := NewRecipe(upstream.Options{Commit: tc.commit})
			if upstream.IsNoSource(err) {
				t.Skip(err)
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Options[1] != tc.qlog {
				t.Errorf("options %v, want %s", r.Options, tc.qlog)
			}
			snap, err := upstream.Open(r.Src)
			if err != nil {
				t.Fatal(err)
			}
			repo, err := gitsrc.Open(snap.Dir())
			if err != nil {
				t.Fatal(err)
			}
			if d := Describe(repo, snap.Commit()); d != tc.describe {
				t.Errorf("describe %s, want %s", d, tc.describe)
			}
		})
	}
	// A checkout that is not quic-go: ngtcp2's mirror.
	_, err := NewRecipe(upstream.Options{Source: os.Getenv("MIGAUDIT_MIRRORS") + "/ngtcp2+ngtcp2/repo", Commit: "v1.0.0"})
	if err == nil || !strings.Contains(err.Error(), "not a Go module") {
		t.Errorf("ngtcp2 checkout accepted as quic-go: %v", err)
	}
}

func TestModuleVersion(t *testing.T) {
	when := time.Date(2026, 8, 7, 8, 33, 52, 0, time.FixedZone("JST", 9*3600))
	c := "2cfe6ee0b5ac11112222333344445555aaaabbbb"
	for _, tc := range []struct{ describe, want string }{
		{"v0.54.0", "v0.54.0"},
		{"v0.61.0-8-g2cfe6ee0b5ac", "v0.61.1-0.20260806233352-2cfe6ee0b5ac"},
		{"2cfe6ee0b5ac", "v0.0.0-20260806233352-2cfe6ee0b5ac"},
	} {
		if got := ModuleVersion(tc.describe, when, c); got != tc.want {
			t.Errorf("ModuleVersion(%q) = %q, want %q", tc.describe, got, tc.want)
		}
	}
}
