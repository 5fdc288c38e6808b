// Package gitsrc reads an implementation's source straight out of git object
// storage at one commit, so a work tree's local edits can never contaminate a
// finding. It opens an existing clone or bare mirror, or clones the upstream
// into the user's cache directory.
package gitsrc

import (
	"errors"
	"fmt"
	"github.com/migaudit/migaudit/data/mirrors"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// MirrorsEnv names the environment variable holding directories of local
// mirrors (colon-separated); package mirrors reads it.
const MirrorsEnv = mirrors.Env

// Repo is an opened git repository.
type Repo struct {
	Dir string
	r   *git.Repository
}

// Open opens the clone or bare mirror at dir.
func Open(dir string) (*Repo, error) {
	r, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: false, EnableDotGitCommonDir: true})
	if err != nil {
		return nil, fmt.Errorf("open git repository %s: %w", dir, err)
	}
	return &Repo{Dir: dir, r: r}, nil
}

// OwnerName splits an upstream URL "https://github.com/o/n" into o, n.
func OwnerName(upstream string) (string, string) { return mirrors.OwnerName(upstream) }

// Candidates lists the directories under mirrors where upstream's mirror may
// be (mirrors.Candidates).
func Candidates(list, upstream string) []string { return mirrors.Candidates(list, upstream) }

// Locate finds the repository for upstream: source if given, else a mirror
// under $MIGAUDIT_MIRRORS, else a clone in the user cache directory (cloned on
// first use, which needs network).
func Locate(upstream, source string) (*Repo, error) {
	if source != "" {
		return Open(source)
	}
	if d, err := mirrors.Find(mirrors.WithCache(mirrors.Resolve("")), upstream); err == nil {
		return Open(d)
	}
	cache, err := mirrors.CacheDir()
	if err != nil {
		return nil, fmt.Errorf("no source for %s: no --source, no mirror in $%s, and no user cache dir: %w", upstream, MirrorsEnv, err)
	}
	_, name := OwnerName(upstream)
	dir := filepath.Join(cache, name+".git")
	if _, err := os.Stat(dir); err == nil {
		return Open(dir) // there but not a repository: say so
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, err
	}
	tmp := dir + ".partial"
	os.RemoveAll(tmp)
	if _, err := git.PlainClone(tmp, true, &git.CloneOptions{URL: upstream, Tags: git.AllTags}); err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("clone %s into %s: %w (offline? point --source at a clone or bare mirror, or set %s to a directory of mirrors)", upstream, dir, err, MirrorsEnv)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return nil, err
	}
	return Open(dir)
}

// Resolve turns a full hash, short hash, tag ("v0.12.1", "0.18.0") or branch
// into a commit hash.
func (r *Repo) Resolve(rev string) (plumbing.Hash, error) {
	if rev == "" {
		rev = "HEAD"
	}
	var tries []string
	tries = append(tries, rev)
	if !strings.HasPrefix(rev, "refs/") && rev != "HEAD" {
		tries = append(tries, "refs/tags/"+rev, "refs/heads/"+rev)
	}
	var lastErr error
	for _, t := range tries {
		h, err := r.r.ResolveRevision(plumbing.Revision(t))
		if err != nil {
			lastErr = err
			continue
		}
		if c, err := r.peel(*h); err == nil {
			return c, nil
		} else {
			lastErr = err
		}
	}
	if isHex(rev) && len(rev) >= 4 && len(rev) < 40 {
		if h, err := r.byPrefix(rev); err == nil {
			return h, nil
		} else {
			lastErr = err
		}
	}
	return plumbing.ZeroHash, fmt.Errorf("resolve %q in %s: %w", rev, r.Dir, lastErr)
}

// peel follows annotated tags to the commit.
func (r *Repo) peel(h plumbing.Hash) (plumbing.Hash, error) {
	for i := 0; i < 8; i++ {
		if _, err := r.r.CommitObject(h); err == nil {
			return h, nil
		}
		t, err := r.r.TagObject(h)
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("%s is neither a commit nor a tag", h)
		}
		h = t.Target
	}
	return plumbing.ZeroHash, fmt.Errorf("tag chain too long at %s", h)
}

func (r *Repo) byPrefix(prefix string) (plumbing.Hash, error) {
	prefix = strings.ToLower(prefix)
	iter, err := r.r.CommitObjects()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	defer iter.Close()
	var found []plumbing.Hash
	errStop := errors.New("stop")
	err = iter.ForEach(func(c *object.Commit) error {
		if strings.HasPrefix(c.Hash.String(), prefix) {
			found = append(found, c.Hash)
			if len(found) > 1 {
				return errStop
			}
		}
		return nil
	})
	if err != nil && err != errStop {
		return plumbing.ZeroHash, err
	}
	switch len(found) {
	case 0:
		return plumbing.ZeroHash, fmt.Errorf("no commit starts with %s", prefix)
	case 1:
		return found[0], nil
	}
	return plumbing.ZeroHash, fmt.Errorf("short hash %s is ambiguous", prefix)
}

func isHex(s string) bool {
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return s != ""
}

// Snapshot is the tree of one commit. It implements audit.Source.
type Snapshot struct {
	repo   *Repo
	commit plumbing.Hash
	tree   *object.Tree
	when   time.Time

	mu    sync.Mutex
	paths []string // all file paths, listed on first glob
}

// At returns the snapshot at rev.
func (r *Repo) At(rev string) (*Snapshot, error) {
	h, err := r.Resolve(rev)
	if err != nil {
		return nil, err
	}
	c, err := r.r.CommitObject(h)
	if err != nil {
		return nil, fmt.Errorf("commit %s in %s: %w", h, r.Dir, err)
	}
	t, err := c.Tree()
	if err != nil {
		return nil, fmt.Errorf("tree of %s in %s: %w", h, r.Dir, err)
	}
	return &Snapshot{repo: r, commit: h, tree: t, when: c.Committer.When}, nil
}

// Commit returns the full hash.
func (s *Snapshot) Commit() string { return s.commit.String() }

// Dir is the repository the snapshot was read from.
func (s *Snapshot) Dir() string { return s.repo.Dir }

// Time is the commit's committer date.
func (s *Snapshot) Time() time.Time { return s.when }

// ErrNotExist is returned (wrapped) when a path is absent at the commit.
var ErrNotExist = os.ErrNotExist

// ReadFile returns the blob at p.
func (s *Snapshot) ReadFile(p string) ([]byte, error) {
	f, err := s.tree.File(p)
	if err != nil {
		if errors.Is(err, object.ErrFileNotFound) || errors.Is(err, object.ErrDirectoryNotFound) || errors.Is(err, object.ErrEntryNotFound) {
			return nil, fmt.Errorf("%s at %s: %w", p, s.commit.String()[:12], ErrNotExist)
		}
		return nil, fmt.Errorf("%s at %s: %w", p, s.commit.String()[:12], err)
	}
	rd, err := f.Reader()
	if err != nil {
		return nil, fmt.Errorf("%s at %s: %w", p, s.commit.String()[:12], err)
	}
	defer rd.Close()
	return io.ReadAll(rd)
}

// Files lists the file paths matching any of the patterns. A pattern is a
// path.Match pattern per segment where "**" matches any number of segments
// ("picoquic/*.c", "quiche/src/**/*.rs", "src/core").
// A pattern without wildcards that names a directory lists it recursively.
func (s *Snapshot) Files(patterns ...string) ([]string, error) {
	all, err := s.all()
	if err != nil {
		return nil, err
	}
	var out []string
	seen := map[string]bool{}
	for _, p := range patterns {
		for _, f := range all {
			if !seen[f] && match(p, f) {
				seen[f] = true
				out = append(out, f)
			}
		}
	}
	return out, nil
}

func (s *Snapshot) all() ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.paths != nil {
		return s.paths, nil
	}
	var paths []string
	walker := object.NewTreeWalker(s.tree, true, nil)
	defer walker.Close()
	for {
		name, e, err := walker.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("list files at %s: %w", s.commit.String()[:12], err)
		}
		if e.Mode == filemode.Regular || e.Mode == filemode.Executable {
			paths = append(paths, name)
		}
	}
	s.paths = paths
	return paths, nil
}

// match matches file against pattern ("**" = any number of segments).
func match(pattern, file string) bool {
	if !strings.ContainsAny(pattern, "*?[") {
		return file == pattern || strings.HasPrefix(file, strings.TrimSuffix(pattern, "/")+"/")
	}
	return matchSegs(strings.Split(pattern, "/"), strings.Split(file, "/"))
}

func matchSegs(p, f []string) bool {
	for len(p) > 0 {
		if p[0] == "**" {
			for i := 0; i <= len(f); i++ {
				if matchSegs(p[1:], f[i:]) {
					return true
				}
			}
			return false
		}
		if len(f) == 0 {
			return false
		}
		if ok, _ := path.Match(p[0], f[0]); !ok {
			return false
		}
		p, f = p[1:], f[1:]
	}
	return len(f) == 0
}
