package gitsrc

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// Tag is a tag peeled to its commit.
type Tag struct {
	Name   string
	Commit string
	When   time.Time
}

// Tags lists the repository's tags peeled to commits (tags on other
// objects are skipped), oldest commit first.
func (r *Repo) Tags() ([]Tag, error) {
	it, err := r.r.Tags()
	if err != nil {
		return nil, fmt.Errorf("tags of %s: %w", r.Dir, err)
	}
	var out []Tag
	err = it.ForEach(func(ref *plumbing.Reference) error {
		h, err := r.peel(ref.Hash())
		if err != nil {
			return nil
		}
		c, err := r.r.CommitObject(h)
		if err != nil {
			return nil
		}
		out = append(out, Tag{Name: ref.Name().Short(), Commit: h.String(), When: c.Committer.When})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("tags of %s: %w", r.Dir, err)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].When.Before(out[j].When) })
	return out, nil
}

// FirstParents lists the commits from "to" back along first parents until
// "from" (excluded), oldest first; ok is false when "from" is not on that
// chain (a release branch) or the walk exceeds limit commits.
func (r *Repo) FirstParents(from, to string, limit int) (out []string, ok bool, err error) {
	h := plumbing.NewHash(to)
	for n := 0; n < limit; n++ {
		if h.String() == from {
			for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
				out[i], out[j] = out[j], out[i]
			}
			return out, true, nil
		}
		c, err := r.r.CommitObject(h)
		if err != nil {
			return nil, false, fmt.Errorf("commit %s in %s: %w", h, r.Dir, err)
		}
		out = append(out, h.String())
		if len(c.ParentHashes) == 0 {
			return nil, false, nil
		}
		h = c.ParentHashes[0]
	}
	return nil, false, nil
}

// Subject is the first line of the commit's message.
func (r *Repo) Subject(commit string) string {
	c, err := r.r.CommitObject(plumbing.NewHash(commit))
	if err != nil {
		return ""
	}
	s, _, _ := strings.Cut(c.Message, "\n")
	return s
}

// FirstParentChain lists up to n commits from "to" back along first
// parents, newest first ("to" itself first).
func (r *Repo) FirstParentChain(to string, n int) ([]string, error) {
	h := plumbing.NewHash(to)
	var out []string
	for len(out) < n {
		c, err := r.r.CommitObject(h)
		if err != nil {
			return nil, fmt.Errorf("commit %s in %s: %w", h, r.Dir, err)
		}
		out = append(out, h.String())
		if len(c.ParentHashes) == 0 {
			break
		}
		h = c.ParentHashes[0]
	}
	return out, nil
}
