package gitsrc

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// CommitFiles makes a fresh repository in dir holding files (path -> content)
// in one commit and returns that commit: a source to audit in tests and
// examples, read through git like any upstream.
func CommitFiles(dir string, files map[string]string) (*Snapshot, error) {
	r, err := git.PlainInit(dir, false)
	if err != nil {
		return nil, fmt.Errorf("init %s: %w", dir, err)
	}
	wt, err := r.Worktree()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(full, []byte(files[p]), 0o644); err != nil {
			return nil, err
		}
		if _, err := wt.Add(p); err != nil {
			return nil, fmt.Errorf("add %s: %w", p, err)
		}
	}
	h, err := wt.Commit("files", &git.CommitOptions{Author: &object.Signature{Name: "migaudit", Email: "migaudit@example.invalid", When: time.Unix(0, 0)}})
	if err != nil {
		return nil, fmt.Errorf("commit in %s: %w", dir, err)
	}
	repo, err := Open(dir)
	if err != nil {
		return nil, err
	}
	return repo.At(h.String())
}
