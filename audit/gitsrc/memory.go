package gitsrc

import (
	"fmt"
	"sort"
	"time"

	"github.com/go-git/go-billy/v5/memfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"
)

// MemCommits builds an in-memory repository (no disk) with one commit per
// element of trees, each holding exactly its files (path -> content), in
// order, and returns the snapshots: fixture sources for rule tests, read
// through git objects like any upstream.
func MemCommits(trees ...map[string]string) ([]*Snapshot, error) {
	fs := memfs.New()
	r, err := git.Init(memory.NewStorage(), fs)
	if err != nil {
		return nil, fmt.Errorf("init in-memory repository: %w", err)
	}
	wt, err := r.Worktree()
	if err != nil {
		return nil, fmt.Errorf("in-memory worktree: %w", err)
	}
	repo := &Repo{Dir: "(memory)", r: r}
	var out []*Snapshot
	var prev map[string]string
	for i, files := range trees {
		// Each commit holds exactly its tree: drop what the previous had.
		for p := range prev {
			if _, ok := files[p]; !ok {
				if _, err := wt.Remove(p); err != nil {
					return nil, fmt.Errorf("commit %d: remove %s: %w", i, p, err)
				}
			}
		}
		prev = files
		paths := make([]string, 0, len(files))
		for p := range files {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		for _, p := range paths {
			f, err := fs.Create(p)
			if err != nil {
				return nil, fmt.Errorf("commit %d: create %s: %w", i, p, err)
			}
			_, err = f.Write([]byte(files[p]))
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return nil, fmt.Errorf("commit %d: write %s: %w", i, p, err)
			}
			if _, err := wt.Add(p); err != nil {
				return nil, fmt.Errorf("commit %d: add %s: %w", i, p, err)
			}
		}
		h, err := wt.Commit(fmt.Sprintf("fixture %d", i), &git.CommitOptions{AllowEmptyCommits: true,
			Author: &object.Signature{Name: "migaudit", Email: "migaudit@example.invalid", When: time.Unix(int64(i)*86400, 0)}})
		if err != nil {
			return nil, fmt.Errorf("commit %d: %w", i, err)
		}
		s, err := repo.At(h.String())
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// MemCommit is MemCommits with one tree.
func MemCommit(files map[string]string) (*Snapshot, error) {
	s, err := MemCommits(files)
	if err != nil {
		return nil, err
	}
	return s[0], nil
}
