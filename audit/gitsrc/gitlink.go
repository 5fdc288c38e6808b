package gitsrc

import (
	"fmt"
	"path"

	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// Gitlink returns the commit a submodule at p (a tree path such as
// "lib/sfparse") is pinned to in this snapshot, and false when p is not a
// submodule here (absent, or an ordinary directory of vendored files).
func (s *Snapshot) Gitlink(p string) (string, bool, error) {
	e, err := s.tree.FindEntry(path.Clean(p))
	if err != nil {
		return "", false, nil
	}
	if e.Mode != filemode.Submodule {
		return "", false, nil
	}
	if e.Hash.IsZero() {
		return "", false, fmt.Errorf("gitlink %s at %s has no commit", p, s.commit.String()[:12])
	}
	return e.Hash.String(), true, nil
}
