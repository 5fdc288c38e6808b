package gitsrc

import "github.com/go-git/go-git/v5/plumbing"

// HasCommit reports whether the commit with full hash h is in the
// repository's object storage.
func (r *Repo) HasCommit(h string) bool {
	if len(h) != 40 || !isHex(h) {
		return false
	}
	_, err := r.r.CommitObject(plumbing.NewHash(h))
	return err == nil
}

// Repo is the repository the snapshot was read from.
func (s *Snapshot) Repo() *Repo { return s.repo }
