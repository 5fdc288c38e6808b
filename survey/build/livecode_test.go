package build

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/migaudit/migaudit/survey"
)

func TestCodeOfManifest(t *testing.T) {
	commit := strings.Repeat("d7", 20)
	for _, tc := range []struct {
		name                    string
		manifest                string
		build, commit, tag, err string
		bins                    int
	}{
		{"ngtcp2 from the checkout", `{"version":"1.25.90+d7d7d7d7d7d7","binaries":[{"role":"server","sha256":"aa","version":"1.25.90+x","version_source":"ngtcp2 … build.json"},{"role":"client","sha256":"bb","version":"1.25.90+x"}],"result":{"settings":{"build":"from-checkout","live_commit":"` + commit + `"}}}`,
			survey.BuildFromCheckout, commit, "", "", 2},
		{"picoquic (upstream_commit only)", `{"version":"1.1.51.1+0dc8","binaries":[{"role":"harness","sha256":"cc","version":"1.1.51.1"}],"result":{"settings":{"upstream_commit":"` + commit + `"}}}`,
			survey.BuildFromCheckout, commit, "", "", 1},
		{"ngtcp2 Debian 0.12.1", `{"version":"0.12.1","binaries":[{"role":"client","sha256":"aa","version":"0.12.1+dfsg-1+deb12u1","version_source":"dpkg-query -W ngtcp2-client"},{"role":"library","version":"0.12.1+dfsg-1+deb12u1","version_source":"dpkg-query -W libngtcp2-9"}],"result":{"settings":{}}}`,
			survey.BuildDebian, "", "v0.12.1", "", 1},
		{"quic-go module", `{"version":"v0.61.0","binaries":[{"role":"client+server","sha256":"aa","version":"v0.61.0","version_source":"debug.ReadBuildInfo github.com/quic-go/quic-go h1:x"}]}`,
			survey.BuildModuleProxy, "", "v0.61.0", "", 1},
		{"quiche npm", `{"version":"quiche 0.18.0 (@matrixai/quic-linux-x64@2.0.9)","binaries":[{"role":"client+server (native module)","sha256":"aa","version":"quiche 0.18.0","version_source":"@matrixai/quic-linux-x64@2.0.9 package.json"}]}`,
			survey.BuildNPM, "", "0.18.0", "", 1},
		{"nothing recorded", `{"version":"x","binaries":[]}`, "", "", "", "neither a build nor a package", 0},
		{"short live commit", `{"result":{"settings":{"live_commit":"d7fb3ed0"}}}`, "", "", "", "not a full commit", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var man map[string]any
			if err := json.Unmarshal([]byte(tc.manifest), &man); err != nil {
				t.Fatal(err)
			}
			c, err := codeOfManifest(man)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.build != tc.build || c.commit != tc.commit || c.tag != tc.tag || len(c.bins) != tc.bins {
				t.Fatalf("got %+v, want build %s commit %s tag %s and %d binaries", c, tc.build, tc.commit, tc.tag, tc.bins)
			}
		})
	}
}
