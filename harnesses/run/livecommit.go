package run

import (
	"fmt"
	"sync"

	"github.com/migaudit/migaudit/data"
)

// LiveCommitSetting is the RepResult.Settings key under which a harness
// records the full commit of the code that ran (a build from a checkout, or
// the release tag a distribution package was made from).
const LiveCommitSetting = "live_commit"

// ConstantsAt, when set, returns impl's discriminator constants audited at
// commit (cmd/migaudit sets it to the source audit; this package does not
// import the audit). A repetition whose live commit is not the pin is
// analysed with the constants of the code that ran.
var ConstantsAt func(impl, commit string) (*data.Constants, error)

var (
	constMu    sync.Mutex
	constCache = map[string]*data.Constants{}
)

// liveConstants returns the constants for a repetition: nil (data's, the
// pin's) when it ran the pin or recorded no commit; else those audited at
// its commit, or nil and a warning saying why they could not be.
func liveConstants(impl string, res RepResult) (*data.Constants, string) {
	commit := res.Settings[LiveCommitSetting]
	if commit == "" {
		return nil, ""
	}
	im, err := data.Lookup(impl)
	if err != nil || im.Commit == commit {
		return nil, ""
	}
	// Constants the audit wrote at that commit (data/constants/at) need
	// no mirror; otherwise the audit runs at the commit.
	if c, found, err := data.ConstantsWrittenAt(impl, commit); err == nil && found {
		return &c, ""
	}
	if ConstantsAt == nil {
		return nil, fmt.Sprintf("constants are the pin's (%s), not those of the commit that ran (%s): no source audit is linked into this program", short12(im.Commit), short12(commit))
	}
	key := impl + "@" + commit
	constMu.Lock()
	defer constMu.Unlock()
	if c, ok := constCache[key]; ok {
		return c, ""
	}
	c, err := ConstantsAt(impl, commit)
	if err != nil {
		return nil, fmt.Sprintf("constants are the pin's (%s), not those of the commit that ran (%s): %v", short12(im.Commit), short12(commit), err)
	}
	constCache[key] = c
	return c, ""
}

func short12(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}
