package run

import (
	"errors"
	"strings"
	"testing"

	"github.com/migaudit/migaudit/data"
)

func TestLiveConstants(t *testing.T) {
	im, err := data.Lookup("ngtcp2")
	if err != nil {
		t.Fatal(err)
	}
	other := strings.Repeat("ab", 20)
	audited := &data.Constants{InitialWindows: []data.Formula{{Expr: "10*S", Provenance: "audit " + other}}}
	defer func(f func(string, string) (*data.Constants, error)) { ConstantsAt = f }(ConstantsAt)
	for _, tc := range []struct {
		name     string
		commit   string
		hook     func(string, string) (*data.Constants, error)
		want     *data.Constants
		wantWarn string
	}{
		{"no commit recorded: the pin's", "", nil, nil, ""},
		{"the pin: data's", im.Commit, func(string, string) (*data.Constants, error) { t.Fatal("audited the pin"); return nil, nil }, nil, ""},
		{"another commit: audited there", other, func(impl, c string) (*data.Constants, error) {
			if impl != "ngtcp2" || c != other {
				t.Fatalf("audit asked for %s@%s", impl, c)
			}
			return audited, nil
		}, audited, ""},
		{"no audit linked", other + "x", nil, nil, "no source audit is linked"},
		{"audit fails", other + "y", func(string, string) (*data.Constants, error) { return nil, errors.New("no mirror") }, nil, "no mirror"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ConstantsAt = tc.hook
			got, warn := liveConstants("ngtcp2", RepResult{Settings: map[string]string{LiveCommitSetting: tc.commit}})
			if got != tc.want {
				t.Errorf("constants %v, want %v", got, tc.want)
			}
			if (tc.wantWarn == "") != (warn == "") || !strings.Contains(warn, tc.wantWarn) {
				t.Errorf("warning %q, want one containing %q", warn, tc.wantWarn)
			}
		})
	}
}
