package audit

import (
	"fmt"
	"strings"

	"github.com/migaudit/migaudit/audit/gitsrc"
	"github.com/migaudit/migaudit/data"
)

// knownRoots are the parentless commits of each implementation's upstream
// history (git rev-list --max-parents=0 --all on the mirrors, 2026-12):
// a repository that holds none of them, nor the pin, is another project.
var knownRoots = map[string][]string{
	"picoquic": {"8c15cb2e1c3d629827e86204423ed9e4d127ef9a"},
	"quic-go":  {"b6178b89fa79a4b0b43a0cb300b34f2b92be8eb5", "afdd7c3898de97b7bc323efc6e13f67c75170b4e"},
	"quiche":   {"234905d465b4602c072c0944b6b6ac3e2a09bd33", "f151293a4eccff9e61360b246a464d763175f28d", "f8cc6fe1dbc6d592109a819d911c3d6ed559fb8a"},
	"msquic":   {"13bf0bddbae32cff711efa01f5cf009db3580cc4", "9d4abf1c351a64033df82ff3f103e3b11313c02c", "9f57303949f003c364d8bcd9a6fc15e5d9b87012", "92bf91eac4023a83d1146c1c43a5bb0f6317ee38"},
	"ngtcp2":   {"c81b240deb5932349bb9ab6c8b0ebf526b673f12", "bfb0f18f11abc7d8d87b1744e85a3ebf9e4dc26c"},
	"quinn":    {"f1c16d1d527bcb8424bd7c9d073735fdcbbc7f3e", "e9c255ac1b24197dc2a14e4b1ef0e1e3990ec3b3", "b919cc7100a1807413d5ee562231694df5a54831"},
	"neqo":     {"24dbd0b792bebdffbe0ec4baad66ed1e3d5a613c"},
	"s2n-quic": {"4e760072cb91e9ea7b0161aff744ac85a76020e3", "271b6e24772c8ed0a4e53fdbd5c4be0a8f823b13"},
	"tquic":    {"5a23bfac2cf5cfe68c355d65b970f176feb4f721"},
	"lsquic":   {"50aadb33c7899be59c7d4ee278697063556fa5c0"},
	"xquic":    {"ceef3bb08c9f35f8063aee649d70bcc111d98729"},
	"mvfst":    {"50d4939e9ea2abec959cbcd0268240af0d171a5b"},
	"aioquic":  {"a80c3bdd1e023affe963f109337dde17f3b57e9e"},
	"quicly":   {"1c5929eab94cff109dc98f4bbc691498c2c6c9b9"},
}

// CheckRepository returns an error when repo is not im's repository: it
// holds neither a known root commit of im's history nor its pin.
func CheckRepository(repo *gitsrc.Repo, im data.Implementation) error {
	roots := knownRoots[im.Name]
	if len(roots) == 0 && im.Commit == "" {
		return nil
	}
	for _, h := range append(roots, im.Commit) {
		if h != "" && repo.HasCommit(h) {
			return nil
		}
	}
	var want []string
	if len(roots) > 0 {
		want = append(want, "root commit "+short(roots[0]))
	}
	if im.Commit != "" {
		want = append(want, "pinned commit "+short(im.Commit))
	}
	return fmt.Errorf("%s is not %s's repository (%s): it holds neither its %s (a shallow clone? fetch the full history)",
		repo.Dir, im.Name, im.Upstream, strings.Join(want, " nor its "))
}
